// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/cli_main.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "staticlm/core/str_cat.h"

namespace staticlm::cli {

int run_cli(int argc, char** argv, std::string_view program, std::string_view description,
            const CommandAdders& adders) {
  CLI::App app{std::string(description), std::string(program)};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(program) + " 0.1.0");

  std::vector<Command> commands;
  for (const auto& add : adders) {
    commands.push_back(add(app));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // No command recognised (a typo, or none given): say which commands there are.
    const bool no_command =
        std::none_of(commands.begin(), commands.end(), [](const Command& command) { return command.app->parsed(); });
    if (no_command) {
      std::vector<std::string> names;
      for (const Command& command : commands) {
        names.push_back(command.app->get_name());
      }
      std::sort(names.begin(), names.end());
      const std::vector<std::string> extras = app.remaining();
      std::string what = "no command given";
      if (!extras.empty()) {
        what = extras.front().rfind('-', 0) == 0
                   ? "unknown option '" + extras.front() + "'"
                   : "'" + extras.front() + "' is not a " + std::string(program) + " command";
      }
      std::fprintf(stderr, "%s: error: %s; the commands are: %s (see %s COMMAND --help)\n",
                   std::string(program).c_str(), what.c_str(), join(names, ", ").c_str(), std::string(program).c_str());
      return 2;
    }
    std::fprintf(stderr, "%s: error: %s (see --help)\n", std::string(program).c_str(), e.what());
    return 2;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) {
      Status status = command.run();
      if (!status.ok()) {
        std::fprintf(stderr, "%s %s: error: %s\n", std::string(program).c_str(), command.app->get_name().c_str(),
                     status.message().c_str());
        return 1;
      }
      return 0;
    }
  }
  return 2;
}

}  // namespace staticlm::cli
