/* suite_child.c - the child processes of `lbscale suite`: each entry
 * runs as its own process (fork+exec, own process group, ended when the
 * suite dies, stdout/stderr through pipes, a timeout per entry); up to
 * --jobs of them at once, waited for together by one poll over all their
 * pipes (suite_children_step). */
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

/* Start argv (PATH searched) with $LBSCALE_ATTEMPT=attempt, stdin from
 * /dev/null and both output streams going to pipes that
 * suite_children_step reads.  0 while it runs; -1 when it could not start
 * (c->spawn_errno says why; nothing to wait for). */
int suite_child_start(char *const argv[], const char *attempt,
                      double timeout_s, struct child *c)
{
    memset(c, 0, sizeof *c);
    c->out.keep = c->err.keep = KEEP_BYTES;   /* the log keeps the tail */
    c->exit_code = -1;
    c->fd[0] = c->fd[1] = -1;
    c->timeout_s = timeout_s;
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
    c->t0 = cli_now();
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
    c->pid = pid;
    c->fd[0] = po[0];
    c->fd[1] = pe[0];
    return 0;
fail:
    c->spawn_errno = errno ? errno : EIO;
    return -1;
}

/* Reap c if it exited, and end its process group when it is past its
 * timeout or the suite was interrupted (TERM, then KILL 5 s later).
 * Whether it is finished: exited, and its pipes at end of file or 2 s
 * gone by (grandchildren may hold them open). */
static int child_check(struct child *c, double now)
{
    if (!c->exited && waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
        c->exited = 1;
        c->drain_until = now + 2.0;
    }
    if (c->exited)
        return (c->fd[0] < 0 && c->fd[1] < 0) || now > c->drain_until;
    if (!c->killed && (suite_interrupted ||
                       (c->timeout_s > 0 && now - c->t0 > c->timeout_s))) {
        if (suite_interrupted)
            c->interrupted = 1;
        else
            c->timed_out = 1;
        kill(-c->pid, SIGTERM);
        c->killed = 1;
        c->kill_at = now + 5.0;
    } else if (c->killed == 1 && now > c->kill_at) {
        kill(-c->pid, SIGKILL);
        c->killed = 2;
    }
    return 0;
}

/* The end of a finished child: pipes closed, exit status and seconds. */
static void child_end(struct child *c)
{
    for (int i = 0; i < 2; i++)
        if (c->fd[i] >= 0) {
            close(c->fd[i]);
            c->fd[i] = -1;
        }
    if (!c->exited) {
        kill(-c->pid, SIGKILL);
        waitpid(c->pid, &c->status, 0);
        c->exited = 1;
    }
    c->seconds = cli_now() - c->t0;
    if (WIFEXITED(c->status))
        c->exit_code = WEXITSTATUS(c->status);
    else if (WIFSIGNALED(c->status))
        c->signal = WTERMSIG(c->status);
}

/* One turn of the suite's wait for its running children c[0..n-1] (n at
 * most SUITE_MAX_JOBS): end those past their timeout (all of them once
 * the suite is interrupted), then wait up to 250 ms for output on all
 * their pipes at once and keep it.  Returns the index of a child that has
 * finished (ended: child_end), or -1 when none has yet. */
int suite_children_step(struct child *const *c, size_t n)
{
    struct pollfd fds[2 * SUITE_MAX_JOBS];
    struct child *owner[2 * SUITE_MAX_JOBS];
    size_t nf = 0;
    int wait_ms = 250;
    double now = cli_now();
    for (size_t k = 0; k < n; k++) {
        if (child_check(c[k], now)) {
            child_end(c[k]);
            return (int)k;
        }
        /* pipes closed but not yet reaped: look again soon */
        if (c[k]->fd[0] < 0 && c[k]->fd[1] < 0)
            wait_ms = 50;
        for (int i = 0; i < 2; i++)
            if (c[k]->fd[i] >= 0) {
                owner[nf] = c[k];
                fds[nf++] = (struct pollfd){c[k]->fd[i], POLLIN, 0};
            }
    }
    int ready = poll(fds, nf, wait_ms);
    if (ready < 0 && errno != EINTR && n) {
        child_end(c[0]);   /* poll itself failed: end one, never spin */
        return 0;
    }
    char chunk[8192];
    for (size_t i = 0; ready > 0 && i < nf; i++) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        struct child *ch = owner[i];
        int err = fds[i].fd == ch->fd[1];
        ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
        if (r > 0) {
            sb_add(err ? &ch->err : &ch->out, chunk, (size_t)r);
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(fds[i].fd);
            ch->fd[err] = -1;
        }
    }
    return -1;
}

/* Run argv to its end (the validation's `lbscale VERB --help`). */
void suite_child_run(char *const argv[], const char *attempt,
                     double timeout_s, struct child *c)
{
    struct child *one[1] = {c};
    if (!suite_child_start(argv, attempt, timeout_s, c))
        while (suite_children_step(one, 1) < 0)
            ;
}
