/* The pod sandbox's process (what registry.k8s.io/pause does), built static with musl-gcc
 * by scripts/k8s.sh so that the cluster needs no registry: it holds the pod's namespaces,
 * reaps orphans, and exits on SIGINT or SIGTERM. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    signal(SIGCHLD, reap);
    for (;;)
        pause();
}
