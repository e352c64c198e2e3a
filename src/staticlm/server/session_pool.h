// SPDX-License-Identifier: Apache-2.0
// The server's sessions: `--parallel N` sessions over one loaded program (weights mapped once),
// handed to requests one at a time, and a bounded queue in front of them. A request takes the
// free session whose cache already holds the longest start of its prompt, so a conversation's
// next turn prefills only what is new.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"

namespace staticlm::server {

class SessionPool;

// A session held by one request; returned to the pool when destroyed.
class SessionLease {
 public:
  SessionLease(SessionLease&& other) noexcept;
  SessionLease& operator=(SessionLease&&) = delete;
  SessionLease(const SessionLease&) = delete;
  ~SessionLease();
  LlmSession& session() const { return *session_; }
  size_t slot() const { return slot_; }
  // The draft program's session beside it, for speculative decoding; null without a draft.
  LlmSession* draft_session() const;

 private:
  friend class SessionPool;
  SessionLease(SessionPool* pool, size_t slot, LlmSession* session) : pool_(pool), slot_(slot), session_(session) {}
  SessionPool* pool_;
  size_t slot_;
  LlmSession* session_;
};

// A place in the queue, taken before the response starts so a full queue is refused with 503.
class QueueTicket {
 public:
  QueueTicket(QueueTicket&& other) noexcept;
  QueueTicket& operator=(QueueTicket&&) = delete;
  QueueTicket(const QueueTicket&) = delete;
  ~QueueTicket();

 private:
  friend class SessionPool;
  explicit QueueTicket(SessionPool* pool) : pool_(pool) {}
  SessionPool* pool_;
};

class SessionPool {
 public:
  // Opens `sessions` sessions on the engine (each allocates its caches and I/O buffers), and as
  // many on `draft` where one is given.
  static Result<std::unique_ptr<SessionPool>> create(const Engine& engine, int sessions, int max_queued,
                                                     const Engine* draft = nullptr);

  // ResourceExhausted when every session is busy and `max_queued` requests already wait.
  Result<QueueTicket> enqueue();
  // Waits for a session, giving up (nullopt) when `keep_waiting`, asked about every
  // `poll_seconds`, says the client is gone. Consumes the ticket.
  std::optional<SessionLease> acquire(QueueTicket ticket, std::span<const int32_t> prompt,
                                      const std::function<bool()>& keep_waiting, double poll_seconds);
  // Session `slot` (0 <= slot < size()) when no request holds it, without waiting or queueing:
  // the slot actions (save, restore, erase) answer at once rather than wait behind a generation,
  // and a request cannot take the session while they read or replace its cache. nullopt when busy.
  std::optional<SessionLease> try_acquire_slot(size_t slot);

  int size() const { return static_cast<int>(sessions_.size()); }
  int64_t context_length() const { return sessions_.front()->max_cache_len(); }
  int64_t vocab_size() const { return sessions_.front()->vocab_size(); }
  bool prefill_returns_all_logits() const { return sessions_.front()->prefill_returns_all_logits(); }
  int64_t hidden_size() const { return sessions_.front()->hidden_size(); }
  // The program's embedding pooling; empty when it has no embeddings method.
  std::string_view embedding_pooling() const { return sessions_.front()->embedding_pooling(); }
  int busy() const;
  int queued() const;
  // Whether each session is generating now, in slot order (llama-server's /slots).
  std::vector<bool> slots_in_use() const;

 private:
  friend class SessionLease;
  friend class QueueTicket;
  SessionPool(std::vector<std::unique_ptr<LlmSession>> sessions, int max_queued);
  void release(size_t slot);
  void leave_queue();

  std::vector<std::unique_ptr<LlmSession>> sessions_;
  std::vector<std::unique_ptr<LlmSession>> drafts_;  // one per session, or none
  int max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<bool> in_use_;
  std::vector<uint64_t> last_used_;  // when each session was released, for least-recently-used ties
  uint64_t clock_ = 0;
  int waiting_ = 0;  // tickets taken and not yet turned into leases
};

}  // namespace staticlm::server
