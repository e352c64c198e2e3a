// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/session_pool.h"

#include <algorithm>
#include <chrono>

namespace staticlm::server {
SessionLease::SessionLease(SessionLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), slot_(other.slot_), session_(other.session_) {}

SessionLease::~SessionLease() {
  if (pool_ != nullptr) {
    pool_->release(slot_);
  }
}

QueueTicket::QueueTicket(QueueTicket&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}

QueueTicket::~QueueTicket() {
  if (pool_ != nullptr) {
    pool_->leave_queue();
  }
}

SessionPool::SessionPool(std::vector<std::unique_ptr<LlmSession>> sessions, int max_queued)
    : sessions_(std::move(sessions)),
      max_queued_(max_queued),
      in_use_(sessions_.size(), false),
      last_used_(sessions_.size(), 0) {}

LlmSession* SessionLease::draft_session() const {
  return pool_->drafts_.empty() ? nullptr : pool_->drafts_[slot_].get();
}

Result<std::unique_ptr<SessionPool>> SessionPool::create(const Engine& engine, int sessions, int max_queued,
                                                         const Engine* draft) {
  if (sessions < 1) {
    return invalid_argument("parallel sessions: expected >= 1, found ", sessions);
  }
  if (max_queued < 0) {
    return invalid_argument("queue length: expected >= 0, found ", max_queued);
  }
  std::vector<std::unique_ptr<LlmSession>> opened;
  for (int i = 0; i < sessions; ++i) {
    auto session = engine.new_session();
    if (!session.ok()) {
      return session.status().with_context(str_cat("opening session ", i + 1, " of ", sessions));
    }
    opened.push_back(std::move(*session));
  }
  auto pool = std::unique_ptr<SessionPool>(new SessionPool(std::move(opened), max_queued));
  for (int i = 0; draft != nullptr && i < sessions; ++i) {
    auto session = draft->new_session();
    if (!session.ok()) {
      return session.status().with_context(str_cat("opening draft session ", i + 1, " of ", sessions));
    }
    pool->drafts_.push_back(std::move(*session));
  }
  return pool;
}

Result<QueueTicket> SessionPool::enqueue() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int free = static_cast<int>(std::count(in_use_.begin(), in_use_.end(), false));
  // Tickets first take free sessions; beyond them, at most max_queued_ wait.
  if (waiting_ - free >= max_queued_) {
    return resource_exhausted("all ", sessions_.size(), " sessions are busy and ", max_queued_,
                              " requests are queued; retry shortly");
  }
  ++waiting_;
  return QueueTicket(this);
}

std::optional<SessionLease> SessionPool::acquire(QueueTicket ticket, std::span<const int32_t> prompt,
                                                 const std::function<bool()>& keep_waiting, double poll_seconds) {
  const auto poll = std::chrono::duration<double>(poll_seconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    std::optional<size_t> best;
    int64_t best_shared = 0;
    for (size_t i = 0; i < sessions_.size(); ++i) {
      if (in_use_[i]) {
        continue;
      }
      const int64_t shared = common_prefix_length(sessions_[i]->cached_tokens(), prompt);
      if (!best || shared > best_shared || (shared == best_shared && last_used_[i] < last_used_[*best])) {
        best = i;
        best_shared = shared;
      }
    }
    if (best) {
      in_use_[*best] = true;
      ticket.pool_ = nullptr;
      --waiting_;
      return SessionLease(this, *best, sessions_[*best].get());
    }
    if (freed_.wait_for(lock, poll) == std::cv_status::timeout) {
      lock.unlock();
      const bool stay = keep_waiting();
      lock.lock();
      if (!stay) {
        return std::nullopt;  // the ticket leaves the queue as it is destroyed (after the lock is released)
      }
    }
  }
}

std::optional<SessionLease> SessionPool::try_acquire_slot(size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot >= sessions_.size() || in_use_[slot]) {
    return std::nullopt;
  }
  in_use_[slot] = true;
  return SessionLease(this, slot, sessions_[slot].get());
}

int SessionPool::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(std::count(in_use_.begin(), in_use_.end(), true));
}

std::vector<bool> SessionPool::slots_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

int SessionPool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int free = static_cast<int>(std::count(in_use_.begin(), in_use_.end(), false));
  return std::max(0, waiting_ - free);
}

void SessionPool::release(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_[slot] = false;
    last_used_[slot] = ++clock_;
  }
  freed_.notify_all();
}

void SessionPool::leave_queue() {
  std::lock_guard<std::mutex> lock(mutex_);
  --waiting_;
}

}  // namespace staticlm::server
