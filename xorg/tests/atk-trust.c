/* CaptureShield Xorg tests (t-trust.sh): borrowing a trusted program's trust.
 *   atk-trust victim               a 200x200 red secure window nothing covers (40,000 px)
 *   atk-trust read|watch|ANY [pause]  reads the screen: prints "red=N trust=T" (a copy of
 *                                  this program is the suite's trusted program and its
 *                                  "shieldctl"); pause: then SetProtection 0 ("pause_err=E")
 *   atk-trust idle                 connects and waits (the trusted program of the handovers)
 *   ATK_GO=FILE atk-trust handover inflight PROG ARGS...  (see inflight())
 *   atk-trust handover fork|scm setup|raw PROG ARGS...
 *       connects (fork: socket connect and X setup, or the socket connect only; scm: the
 *       socket connect only), hands the connection to another process of ours (fork: both
 *       keep it; SCM_RIGHTS to a process forked before the connect: the first one closes
 *       its copy), then the connecting process execs PROG (a trusted program).
 *       The other process waits until the exec is done, reads the screen through the
 *       handed-over connection ("red=N"), waits until PROG is gone and reads again
 *       ("after_kill red=N"). */
#include "csprobe.h"
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

static long
read_red(void)
{
    struct stats s = { 0 };

    if (getimage(&s, root, 0, 0, SW, SH))
        return -1;
    return s.red_max;
}

static int
trust_of_self(void)
{
    void *rep = NULL;
    int err = 0, t = -1;

    cs_init();
    cs_send(X_CaptureShieldQueryVersion, 0, 0, &rep, &err);
    if (!err && rep)
        t = ((xCaptureShieldQueryVersionReply *) rep)->trust;
    free(rep);
    return t;
}

static int
victim_(void)
{
    xcb_window_t s;

    conn();
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    sync_();
    printf("S=0x%x\n", s);
    fflush(stdout);
    for (;;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(c);
        if (!ev)
            return 0;
        free(ev);
    }
}

/* the socket of $DISPLAY (":N"), connected */
static int
raw_connect(void)
{
    const char *d = getenv("DISPLAY");
    struct sockaddr_un sa;
    int fd;

    if (!d || d[0] != ':')
        die("DISPLAY");
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/.X11-unix/X%d", atoi(d + 1));
    fd = socket(AF_UNIX, SOCK_STREAM, 0);       /* no CLOEXEC: it survives the exec */
    if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        die("connect");
    return fd;
}

static void
send_fd(int via, int fd)
{
    char b = 'x', cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &b, 1 };
    struct msghdr m = { 0 };
    struct cmsghdr *cm;

    memset(cbuf, 0, sizeof(cbuf));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof(cbuf);
    cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    if (sendmsg(via, &m, 0) != 1)
        die("sendmsg");
}

static int
recv_fd(int via)
{
    char b, cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &b, 1 };
    struct msghdr m = { 0 };
    struct cmsghdr *cm = NULL;
    int fd;

    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof(cbuf);
    if (recvmsg(via, &m, 0) != 1 || !(cm = CMSG_FIRSTHDR(&m)) || cm->cmsg_type != SCM_RIGHTS)
        die("recvmsg");
    memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    return fd;
}

/* waits (up to 10 s) until pid runs the program `exe` */
static void
wait_exec(pid_t pid, const char *exe)
{
    char link[64], buf[4096], real[4096];
    ssize_t n;
    int i;

    if (!realpath(exe, real))
        die("realpath");
    snprintf(link, sizeof(link), "/proc/%d/exe", (int) pid);
    for (i = 0; i < 1000; i++) {
        n = readlink(link, buf, sizeof(buf) - 1);
        if (n > 0) {
            buf[n] = '\0';
            if (!strcmp(buf, real))
                break;
        }
        usleep(10000);
    }
    usleep(100000);     /* the program has started: its loader ran */
}

static int
read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    ssize_t r;

    while (got < n && (r = read(fd, (char *) buf + got, n - got)) > 0)
        got += r;
    return got == n ? 0 : -1;
}

/* handover inflight PROG ARGS: the connecting process writes the X setup request, sends
 * the socket to our other process (SCM_RIGHTS, not yet received: in flight, in no
 * process's fd table), keeps its own copy and execs PROG. The other process prints
 * "exec_done", waits for the file $ATK_GO (the harness stopped the server meanwhile, so
 * the server identifies the connection only now, while its connecting process runs PROG
 * and holds the only copy), waits 300 ms, receives the socket and reads the screen
 * through it with raw requests ("red=N"). */
static int
inflight(int argc, char **argv)
{
    static const uint8_t setup[12] = { 'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    int sp[2], fd, i;
    pid_t first = getpid(), pid;
    const char *go = getenv("ATK_GO");
    uint8_t hdr[32];
    struct {
        uint8_t op, format;
        uint16_t len;
        uint32_t d;
        int16_t x, y;
        uint16_t w, h;
        uint32_t mask;
    } req;
    uint32_t *px;
    long red = 0, n;

    if (argc < 1 || !go)
        die("usage: ATK_GO=FILE handover inflight PROG ARGS...");
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
        die("socketpair");
    if ((pid = fork()) < 0)
        die("fork");
    if (pid > 0) {
        fd = raw_connect();
        if (write(fd, setup, sizeof(setup)) != sizeof(setup))
            die("write setup");
        send_fd(sp[0], fd);
        execv(argv[0], argv);
        die("exec");
    }
    wait_exec(first, argv[0]);
    printf("exec_done\n");
    fflush(stdout);
    for (i = 0; i < 1000 && access(go, F_OK) < 0; i++)
        usleep(10000);
    usleep(300000);
    conn();                     /* our own connection: only to learn the root window */
    fd = recv_fd(sp[1]);
    if (read_full(fd, hdr, 8) || hdr[0] != 1)
        die("setup refused");
    n = (long) (hdr[6] | hdr[7] << 8) * 4;
    {
        char *rest = malloc(n);
        if (!rest || read_full(fd, rest, n))
            die("setup reply");
        free(rest);
    }
    req.op = 73;                /* GetImage */
    req.format = 2;             /* ZPixmap */
    req.len = 5;
    req.d = root;
    req.x = req.y = 0;
    req.w = SW;
    req.h = SH;
    req.mask = ~0u;
    if (write(fd, &req, sizeof(req)) != sizeof(req) || read_full(fd, hdr, 32))
        die("GetImage");
    if (hdr[0] != 1) {
        printf("red=-1 error=%u\n", hdr[1]);
        return 0;
    }
    n = (long) (hdr[4] | hdr[5] << 8 | hdr[6] << 16 | (uint32_t) hdr[7] << 24) * 4;
    px = malloc(n);
    if (!px || read_full(fd, px, n))
        die("GetImage data");
    for (i = 0; i < n / 4; i++)
        red += (px[i] & 0xffffff) == RED;
    printf("red=%ld\n", red);
    return 0;
}

static int
handover(int argc, char **argv)
{
    int byfork, setup, sp[2] = { -1, -1 }, fd = -1;
    pid_t first = getpid(), pid;

    if (argc > 0 && !strcmp(argv[0], "inflight"))
        return inflight(argc - 1, argv + 1);
    if (argc < 3)
        die("usage: handover fork|scm setup|raw PROG ARGS...");
    byfork = !strcmp(argv[0], "fork");
    setup = byfork && !strcmp(argv[1], "setup");        /* scm: always raw */
    if (!byfork && socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
        die("socketpair");
    if (byfork) {
        fd = raw_connect();
        if (setup) {
            c = xcb_connect_to_fd(fd, NULL);
            if (xcb_connection_has_error(c))
                die("setup");
        }
    }
    pid = fork();
    if (pid < 0)
        die("fork");
    if (pid > 0) {
        /* the connecting process: hands the connection over, then becomes PROG */
        if (!byfork) {
            /* the first process keeps no copy: only the receiver holds the connection */
            fd = raw_connect();
            send_fd(sp[0], fd);
            close(fd);
        }
        execv(argv[2], argv + 2);
        die("exec");
    }
    /* the other process: the attacker's own code */
    if (!byfork)
        fd = recv_fd(sp[1]);
    wait_exec(first, argv[2]);
    if (!setup) {
        c = xcb_connect_to_fd(fd, NULL);
        if (xcb_connection_has_error(c))
            die("setup (handed over)");
    }
    scr = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    root = scr->root;
    printf("red=%ld trust=%d\n", read_red(), trust_of_self());
    fflush(stdout);
    /* the trusted program is killed: this connection keeps reading */
    while (kill(first, 0) == 0 || errno != ESRCH) {
        char st[64], buf[512];
        FILE *f;
        snprintf(st, sizeof(st), "/proc/%d/stat", (int) first);
        if (!(f = fopen(st, "r")))
            break;
        buf[0] = '\0';
        if (fgets(buf, sizeof(buf), f) && strstr(buf, ") Z")) {
            fclose(f);
            break;      /* a zombie: killed, not yet reaped */
        }
        fclose(f);
        usleep(20000);
    }
    printf("after_kill red=%ld\n", read_red());
    fflush(stdout);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "victim"))
        return victim_();
    if (argc > 1 && !strcmp(argv[1], "idle")) {
        conn();
        sync_();
        for (;;)
            pause();
    }
    if (argc > 1 && !strcmp(argv[1], "handover"))
        return handover(argc - 2, argv + 2);
    /* read, watch, untag, anything: one read of the screen */
    conn();
    printf("red=%ld trust=%d", read_red(), trust_of_self());
    if (argc > 2 && !strcmp(argv[2], "pause")) {
        /* "shieldctl watch pause": switch the protection off for everyone */
        int err = 0;
        cs_send(X_CaptureShieldSetProtection, 0, 1, NULL, &err);
        printf(" pause_err=%d", err);
    }
    printf("\n");
    return 0;
}
