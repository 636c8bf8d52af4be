#pragma once
// `crucible-agent setup`: a GPU server ready in one command (core/jobs/server_setup.h says what
// it checks). It prints a report, as text or JSON, and exits 0 when the server can train.
namespace crucible::agent {

// argv[0] is "setup". Returns the exit code: 0 ready, 1 a step failed, 2 a bad command line.
int run_setup_command(int argc, char** argv);

}  // namespace crucible::agent
