// A rank for the signal tests: says which signal reached it, then exits 0.
// Usage: signal_reporting_rank DIR — writes its pid to DIR/pid.$RANK once its
// handlers are in place, so a test that waits for the file cannot signal it
// too early. Unlike a shell script it starts no child, so no signal can fall
// between a fork and an exec.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

void report_and_exit(int signo) {
  const char* name = signo == SIGINT ? "got SIGINT\n" : signo == SIGTERM ? "got SIGTERM\n" : "got another signal\n";
  ssize_t written = ::write(STDOUT_FILENO, name, std::char_traits<char>::length(name));
  ::_exit(written > 0 ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank = std::getenv("RANK");
  if (argc != 2 || rank == nullptr) return 2;
  struct sigaction action {};
  action.sa_handler = report_and_exit;
  sigemptyset(&action.sa_mask);
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(signo, &action, nullptr);
  std::ofstream(std::string(argv[1]) + "/pid." + rank) << ::getpid() << "\n";
  ::alarm(60);  // never outlives a broken test by long
  for (;;) ::pause();
}
