// SPDX-License-Identifier: Apache-2.0
// check_slot_filename: a client's name for a session file stays inside the slot save directory.
// (The actions themselves run against a server in tests/server/test_slot_files.py.)
#include "staticlm/server/slot_actions.h"

#include <gtest/gtest.h>

#include "staticlm/server/completion_request.h"

namespace staticlm::server {
namespace {

TEST(SlotFilenameTest, PlainNamesAreAccepted) {
  for (const char* name : {"x.bin", "system-prompt_2.session", "A", "a.b.c"}) {
    EXPECT_TRUE(check_slot_filename(name).ok()) << name;
  }
  EXPECT_TRUE(check_slot_filename(std::string(255, 'a')).ok());
}

TEST(SlotFilenameTest, AnythingThatCouldLeaveTheDirectoryIsRefusedNamingTheField) {
  for (const char* name : {"", "../x.bin", "..", "a..b", "/etc/passwd", "dir/x.bin", "dir\\x.bin", ".hidden", "x.bin\n",
                           "x bin", "caf\xc3\xa9"}) {
    const Status status = check_slot_filename(name);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(request_error_param(status), "filename") << name;
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << "one line: " << name;
  }
  EXPECT_FALSE(check_slot_filename(std::string(256, 'a')).ok());
  EXPECT_FALSE(check_slot_filename(std::string_view("x\0y", 3)).ok());
}

}  // namespace
}  // namespace staticlm::server
