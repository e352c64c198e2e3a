#include "staticlm/tools/cli_main.h"

#include <cstdio>
#include <string>

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
