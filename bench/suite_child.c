/* suite_child.c - the child processes of `lbscale suite`: each entry
 * runs as its own process (fork+exec, own process group, ended when the
 * suite dies, stdout/stderr through pipes, a timeout per entry). */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "suite_int.h"

extern char **environ;

#define KEEP_BYTES (8u << 20)      /* output kept per stream for the log */

/* ------------------------------------------------------------------ */
/* child processes                                                      */

volatile sig_atomic_t suite_interrupted;

void suite_on_signal(int sig)
{
    suite_interrupted = sig;
}

void suite_child_free(struct child *c)
{
    free(c->out.p);
    free(c->err.p);
}

/* argv[0] as a path execve can take: PATH searched in the parent, since
 * the forked child may only make async-signal-safe calls. */
static int find_exe(const char *name, char *out, size_t len)
{
    if (strchr(name, '/'))
        return snprintf(out, len, "%s", name) < (int)len ? 0 : ENAMETOOLONG;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        int w = snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", name);
        if (w > 0 && (size_t)w < len && !access(out, X_OK))
            return 0;
        p += n + (p[n] == ':');
    }
    return ENOENT;
}

/* The child's side of child_run, between fork and exec: its own process
 * group (so a timeout can end it with its grandchildren), SIGTERM when the
 * suite dies (even by SIGKILL: PR_SET_PDEATHSIG; mpirun passes it to its
 * ranks), default signal dispositions, stdin from /dev/null. */
static void child_exec(const char *exe, char *const argv[], char *const envp[],
                       pid_t parent, int out_fd, int err_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)        /* the suite died before prctl */
        _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
        _exit(127);
    execve(exe, argv, envp);
    _exit(127);
}

/* environ without NAME, plus NAME=value unless value is NULL (new array
 * whose first slot is the string env_free frees; the rest are environ's) */
static char **env_with(const char *name, const char *value)
{
    size_t n = 0, k = strlen(name);
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    char *kv = value ? malloc(k + strlen(value) + 2) : NULL;
    if (!env || (value && !kv)) {
        free(env);
        free(kv);
        return NULL;
    }
    size_t j = 1;       /* env[0]: ownership slot, not passed to exec */
    if (kv) {
        sprintf(kv, "%s=%s", name, value);
        env[0] = env[j++] = kv;
    }
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], name, k) || environ[i][k] != '=')
            env[j++] = environ[i];
    return env;
}

static void env_free(char **env)
{
    if (env)
        free(env[0]);
    free(env);
}

/* Run argv (PATH searched) with $LBSCALE_ATTEMPT=attempt, stdin from
 * /dev/null and both output streams captured; kill its process group
 * after timeout_s seconds (TERM, then KILL 5 s later) or when the suite is
 * interrupted.  tick is called about every 0.25 s (may be NULL). */
void suite_child_run(char *const argv[], const char *attempt,
                     double timeout_s, tick_fn tick, void *ctx,
                     struct child *c)
{
    memset(c, 0, sizeof *c);
    c->out.keep = c->err.keep = KEEP_BYTES;   /* the log keeps the tail */
    c->exit_code = -1;
    char exe[PATH_MAX];
    int rc = find_exe(argv[0], exe, sizeof exe);
    if (rc) {
        errno = rc;
        goto fail;
    }
    char **envp = env_with(LBS_ATTEMPT_ENV, attempt);
    if (!envp)
        goto fail;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC)) {
        env_free(envp);
        goto fail;
    }
    if (pipe2(pe, O_CLOEXEC)) {
        close(po[0]);
        close(po[1]);
        env_free(envp);
        goto fail;
    }
    pid_t parent = getpid();
    double t0 = cli_now();
    /* _Fork: fork without the atfork handlers.  The child only execs
     * (async-signal-safe calls before it), and OpenBLAS's prefork handler
     * joins its threads, one of which can be stuck in malloc for ever when
     * memory is starved: the suite would hang before its first entry. */
    pid_t pid = _Fork();
    if (pid == 0)
        child_exec(exe, argv, envp + 1, parent, po[1], pe[1]);
    int fork_errno = errno;
    env_free(envp);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        errno = fork_errno;
        goto fail;
    }
    setpgid(pid, pid);   /* also here: no race with kill(-pid) below */
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2, exited = 0, st = 0, killed = 0;
    double kill_at = 0, drain_until = 0;
    char chunk[8192];
    for (;;) {
        double now = cli_now();
        if (!exited) {
            pid_t w = waitpid(pid, &st, WNOHANG);
            if (w == pid) {
                exited = 1;
                drain_until = now + 2.0;   /* grandchildren may hold pipes */
            }
        }
        if (exited && (open_fds == 0 || now > drain_until))
            break;
        if (!exited && !killed && (suite_interrupted ||
                                   (timeout_s > 0 && now - t0 > timeout_s))) {
            if (suite_interrupted)
                c->interrupted = 1;
            else
                c->timed_out = 1;
            kill(-pid, SIGTERM);
            killed = 1;
            kill_at = now + 5.0;
        } else if (!exited && killed == 1 && now > kill_at) {
            kill(-pid, SIGKILL);
            killed = 2;
        }
        if (tick && !exited)
            tick(ctx, now - t0);
        if (open_fds == 0) {
            poll(NULL, 0, 50);
            continue;
        }
        int n = poll(fds, 2, 250);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; n > 0 && i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r > 0) {
                sb_add(i ? &c->err : &c->out, chunk, (size_t)r);
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (!exited) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    c->seconds = cli_now() - t0;
    if (WIFEXITED(st))
        c->exit_code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        c->signal = WTERMSIG(st);
    return;
fail:
    c->spawn_errno = errno ? errno : EIO;
}
