// SPDX-License-Identifier: Apache-2.0
// The entry point both CLI binaries share: parse, run the chosen subcommand, turn its Status
// into one line on stderr and an exit code.
#pragma once

#include <string_view>
#include <vector>

#include "staticlm/tools/command.h"

namespace staticlm::cli {

using CommandAdders = std::vector<Command (*)(CLI::App&)>;

int run_cli(int argc, char** argv, std::string_view program, std::string_view description,
            const CommandAdders& commands);

}  // namespace staticlm::cli
