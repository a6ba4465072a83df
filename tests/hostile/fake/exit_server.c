/* tests/hostile/fake/exit_server.c - a stand-in server for the driver's own
 * check of srv_stop (tests/hostile/run.sh): it prints "listening
 * 127.0.0.1:PORT", answers GET /ping 200 and anything else 404, and
 * closes, enough for the start-garbage case;
 * on SIGTERM its main thread leaves (pthread_exit: a zombie) and
 *   EXIT_SERVER=slow  another thread waits in vfork() (uninterruptible, as
 *                     a thread in the kernel's exit path) for a child that
 *                     sleeps 5 s, then exits the process: an exit the
 *                     kernel takes 5 s to finish, which must pass;
 *   EXIT_SERVER=hang  another thread sleeps in user space for 60 s: a
 *                     server that never exits, which must need SIGKILL. */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t term;

static void on_term(int sig)
{
    (void)sig;
    term = 1;
}

static void *leave(void *arg)
{
    struct timespec t = {arg ? 60 : 5, 0};

    if (arg) { /* hang */
        nanosleep(&t, NULL);
        return NULL;
    }
    if (vfork() == 0) {
        nanosleep(&t, NULL);
        _exit(0);
    }
    exit(0);
}

int main(void)
{
    const char *mode = getenv("EXIT_SERVER");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    pthread_t t;

    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    if (!mode || (strcmp(mode, "slow") && strcmp(mode, "hang")) || lfd < 0 ||
        bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 16) ||
        getsockname(lfd, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "exit_server: EXIT_SERVER=slow|hang, and a loopback listener\n");
        return 2;
    }
    printf("listening 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    while (!term) {
        struct pollfd p = {lfd, POLLIN, 0};
        char buf[4096];
        int c;

        if (poll(&p, 1, 50) != 1 || (c = accept(lfd, NULL, NULL)) < 0)
            continue;
        ssize_t n = read(c, buf, sizeof buf - 1);
        const char *r = n > 0 && !strncmp(buf, "GET /ping ", 10)
                            ? "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\npong"
                            : "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNot Found";
        if (n > 0 && write(c, r, strlen(r)) < 0)
            perror("exit_server: write");
        close(c);
    }
    if (pthread_create(&t, NULL, leave, strcmp(mode, "hang") ? NULL : (void *)1) != 0)
        return 1;
    pthread_exit(NULL);
}
