// staticlm: the command-line front end. Thin by design: parse, call the library, report.
#include <cstdio>
#include <string>
#include <vector>

#include "staticlm/tools/command.h"

int main(int argc, char** argv) {
  CLI::App app{"staticlm: export Hugging Face LLMs to static-shape programs and run them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "staticlm 0.1.0");

  std::vector<staticlm::cli::Command> commands;
  commands.push_back(staticlm::cli::add_backends_command(app));
  commands.push_back(staticlm::cli::add_export_command(app));
  commands.push_back(staticlm::cli::add_inspect_command(app));
  commands.push_back(staticlm::cli::add_logits_command(app));
  commands.push_back(staticlm::cli::add_run_command(app));
  commands.push_back(staticlm::cli::add_tokenize_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "staticlm: error: %s (see --help)\n", e.what());
    return 2;
  }

  for (const staticlm::cli::Command& command : commands) {
    if (command.app->parsed()) {
      staticlm::Status status = command.run();
      if (!status.ok()) {
        std::fprintf(stderr, "staticlm %s: error: %s\n", command.app->get_name().c_str(), status.message().c_str());
        return 1;
      }
      return 0;
    }
  }
  return 2;
}
