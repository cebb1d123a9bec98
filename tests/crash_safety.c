/* Crash safety of checkpoints: a small training run that saves a checkpoint
 * after every step is killed with SIGKILL at random moments, again and again;
 * after each kill the last checkpoint must load, be byte-identical to the
 * checkpoint an uninterrupted run wrote at the same step, and resume to the
 * uninterrupted run's final model, byte for byte.
 *
 * The run is a child process (fork), so a kill can land anywhere: in a
 * training step, in the middle of writing the temporary file, in fsync,
 * between fsync and rename.  A kill that leaves a "run.ckpt.tmp-XXXXXX" file
 * behind landed during a save (after mkstemp, before rename); the test counts
 * those.  Random moments rarely hit a save when writes are fast (tmpfs, a
 * slow instrumented build), so every third kill is aimed: the parent watches
 * the run directory with inotify and kills the moment the N-th temporary
 * file is created, which lands inside that save; the test requires that
 * some kills landed during a save.  Each killed run is resumed by the next one, as a
 * restarted job would be; a run that finishes before its kill, or gets within
 * two steps of the end, starts the chain over.
 *
 * A kill that comes after its run finished is not counted (that run's final
 * model is compared with the reference instead).
 *
 * Usage: crash_safety [KILLS]   (default RAM_CRASH_KILLS or 60; RAM_CRASH_SEED=N fixes the
 * random kill times, which are printed).  Public API only. */
#define _POSIX_C_SOURCE 200809L
#include <ram/ram.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SIDE = 12, IMG = SIDE * SIDE, NDATA = 64, BATCH = 16, NCLASS = 3, STEPS = 40 };
/* Caller data stored with each checkpoint: the step, and padding so a save
 * (write + fsync of ~100 KiB) takes a fair share of each step. */
enum { PAD = 96 * 1024 };

static void die(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "crash_safety: FAIL: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(1);
}

static void check(ram_status s, const char *what) {
    if (s != RAM_OK) die("%s: %s", what, ram_last_error());
}

static float data[NDATA * IMG];
static int labels[NDATA];

static void make_data(void) {
    uint64_t x = 77;
    for (int i = 0; i < NDATA; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        labels[i] = (int)(x >> 33) % NCLASS;
        for (int p = 0; p < IMG; p++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            data[i * IMG + p] =
                0.3f * (float)(x >> 40) / 16777216.0f + (p % SIDE / 4 == labels[i] ? 0.7f : 0.0f);
        }
    }
}

typedef struct run {
    ram_model *m;
    ram_policy *pol;
    ram_trainer *t;
} run;

static void setup(run *r) {
    ram_model_params mp;
    ram_model_params_init(&mp);
    mp.height = mp.width = SIDE;
    mp.glimpse.patch = 4;
    mp.glimpse.depth = 2;
    mp.glimpse_hidden = mp.loc_hidden = 8;
    mp.glimpse_out = mp.core_hidden = 16;
    mp.glimpses = 3;
    mp.classes = NCLASS;
    mp.core = RAM_CORE_LSTM;
    mp.seed = 5;
    check(ram_model_create(&mp, &r->m), "model_create");
    ram_policy_params pp;
    ram_policy_params_init(&pp);
    pp.seed = 6;
    check(ram_policy_create(&pp, r->m, &r->pol), "policy_create");
    ram_trainer_params tp;
    ram_trainer_params_init(&tp);
    tp.lr = 3e-3f;
    tp.max_batch = BATCH;
    tp.threads = 2;
    check(ram_trainer_create(r->m, r->pol, &tp, &r->t), "trainer_create");
}

static void teardown(run *r) {
    ram_trainer_free(r->t);
    ram_policy_free(r->pol);
    ram_model_free(r->m);
}

static char *path_in(const char *dir, const char *name) {
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *d = malloc(cap);
    size_t k;
    while (d && (k = fread(d + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) d = realloc(d, cap *= 2);
    }
    fclose(f);
    if (!d) die("%s: out of memory%s", path, "");
    *len = n;
    return d;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    unsigned char *da = read_all(a, &na), *db = read_all(b, &nb);
    int same = da && db && na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return same;
}

/* Paths from path_in() live for the next three calls only. */

/* The training job: resume from DIR/run.ckpt if present, train to STEPS with
 * a checkpoint after every step, then save DIR/final.ram.  With `ref`, also
 * keep each step's checkpoint as REF/step-N.ckpt. */
static void job(const char *dir, const char *ref) {
    static unsigned char user[sizeof(long) + PAD];
    run r;
    setup(&r);
    char ckpt[4096];
    snprintf(ckpt, sizeof ckpt, "%s", path_in(dir, "run.ckpt"));
    if (exists(ckpt)) check(ram_trainer_load_checkpoint(r.t, ckpt, NULL, 0, NULL), ckpt);
    static float batch[BATCH * IMG];
    int perm[NDATA], y[BATCH];
    while (ram_trainer_steps(r.t) < STEPS) {
        check(ram_trainer_shuffle(r.t, perm, NDATA), "shuffle");
        for (int i = 0; i < BATCH; i++) {
            memcpy(batch + i * IMG, data + perm[i] * IMG, sizeof(float) * IMG);
            y[i] = labels[perm[i]];
        }
        check(ram_trainer_train_batch(r.t, batch, y, BATCH, NULL), "train_batch");
        long step = ram_trainer_steps(r.t);
        memcpy(user, &step, sizeof step);
        memset(user + sizeof step, (int)(step & 0xff), PAD);
        check(ram_trainer_save_checkpoint(r.t, ckpt, user, sizeof user), ckpt);
        if (ref) {
            char name[64];
            snprintf(name, sizeof name, "step-%03ld.ckpt", step);
            check(ram_trainer_save_checkpoint(r.t, path_in(ref, name), user, sizeof user), name);
        }
    }
    check(ram_model_save(r.m, path_in(dir, "final.ram")), "model_save");
    teardown(&r);
}

static pid_t start_job(const char *dir, const char *ref) {
    pid_t pid = fork();
    if (pid < 0) die("fork: %s%s", strerror(errno), "");
    if (pid == 0) {
        job(dir, ref);
        _exit(0);
    }
    return pid;
}

static void finish_job(pid_t pid, const char *what) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("%s: the job failed%s", what, "");
}

/* Block until the n-th temporary checkpoint file is created in the watched
 * directory (inotify descriptor `fd`), or until child `pid` ended (it is not
 * reaped); returns 0, or -1 if the watch failed. */
static int wait_for_temp(int fd, pid_t pid, int n) {
    _Alignas(struct inotify_event) char buf[4096];
    while (n > 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 200);
        if (r < 0 && errno != EINTR) return -1;
        if (r <= 0) {
            siginfo_t info = {0};
            if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid)
                return 0;
            continue;
        }
        ssize_t len = read(fd, buf, sizeof buf);
        if (len <= 0) return -1;
        for (char *q = buf; q < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)q;
            if ((ev->mask & IN_CREATE) && ev->len && strstr(ev->name, ".tmp-") && --n == 0)
                return 0;
            q += sizeof *ev + ev->len;
        }
    }
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Remove DIR's temporary files; returns how many there were. */
static int remove_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die("%s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) {
            unlink(path_in(dir, e->d_name));
            n++;
        }
    closedir(d);
    return n;
}

static void empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') unlink(path_in(dir, e->d_name));
    closedir(d);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    unsigned char *d = read_all(from, &n);
    FILE *f = d ? fopen(to, "wb") : NULL;
    if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0) die("cannot copy %s to %s", from, to);
    free(d);
}

int main(int argc, char **argv) {
    const char *kills_env = getenv("RAM_CRASH_KILLS");
    const int kills = argc > 1 ? atoi(argv[1]) : kills_env ? atoi(kills_env) : 60;
    const char *seed_env = getenv("RAM_CRASH_SEED");
    unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
    srand(seed);
    ram_set_blas_threads(1);
    make_data();

    char top[] = "crash_safety.XXXXXX";
    if (!mkdtemp(top)) die("mkdtemp: %s%s", strerror(errno), "");
    char refdir[64], rundir[64], verdir[64];
    snprintf(refdir, sizeof refdir, "%s/ref", top);
    snprintf(rundir, sizeof rundir, "%s/run", top);
    snprintf(verdir, sizeof verdir, "%s/verify", top);
    mkdir(refdir, 0755);
    mkdir(rundir, 0755);
    mkdir(verdir, 0755);

    /* The uninterrupted run, timed. */
    double t0 = now();
    finish_job(start_job(refdir, refdir), "reference run");
    const double ref_time = now() - t0;
    /* Kill moments are drawn over what is left of the run being restarted
     * (it saved everything twice: count a step as 0.6 of the reference's). */
    const double per_step = 0.6 * ref_time / STEPS;
    long done = 0; /* the step the run being killed resumes from */
    char ref_final[128], ckpt[128], run_final[128], ver_ckpt[128], ver_final[128];
    snprintf(ref_final, sizeof ref_final, "%s/final.ram", refdir);
    snprintf(ckpt, sizeof ckpt, "%s/run.ckpt", rundir);
    snprintf(run_final, sizeof run_final, "%s/final.ram", rundir);
    snprintf(ver_ckpt, sizeof ver_ckpt, "%s/run.ckpt", verdir);
    snprintf(ver_final, sizeof ver_final, "%s/final.ram", verdir);

    int in_save = 0, n_aimed = 0, before_first = 0, finished = 0, checked = 0;
    /* Until `kills` runs were killed while running (a SIGKILL that comes
     * after a run finished does not count). */
    for (int killed = 0; killed < kills;) {
        /* Every third kill is aimed at the start of a random save. */
        const int aimed = killed % 3 == 2 && done < STEPS - 1;
        int watch = aimed ? inotify_init1(IN_CLOEXEC) : -1;
        if (aimed && (watch < 0 || inotify_add_watch(watch, rundir, IN_CREATE) < 0))
            die("inotify: %s%s", strerror(errno), "");
        pid_t pid = start_job(rundir, NULL);
        if (aimed) {
            if (wait_for_temp(watch, pid, 1 + rand() % (int)(STEPS - done - 1)) != 0)
                die("inotify read: %s%s", strerror(errno), "");
            close(watch);
        } else {
            double delay = (0.005 + (STEPS - done) * per_step) * rand() / (double)RAND_MAX;
            struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGKILL);
        int status;
        if (waitpid(pid, &status, 0) != pid) die("waitpid: %s%s", strerror(errno), "");
        if (WIFEXITED(status)) { /* finished before the kill */
            if (WEXITSTATUS(status) != 0) die("a job failed%s%s", "", "");
            if (!same_file(run_final, ref_final))
                die("a run ended with another model than the reference%s%s", "", "");
            finished++;
            empty_dir(rundir);
            done = 0;
            continue;
        }
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
            die("the job ended strangely%s%s", "", "");
        killed++;
        n_aimed += aimed;
        in_save += remove_temps(rundir) > 0;
        if (!exists(ckpt)) {
            before_first++;
            continue;
        }
        /* It loads, as a model and as a checkpoint... */
        ram_model *m = NULL;
        check(ram_model_load(ckpt, &m), "model_load of the last checkpoint");
        ram_model_free(m);
        run r;
        setup(&r);
        long step = -1;
        check(ram_trainer_load_checkpoint(r.t, ckpt, &step, sizeof step, NULL),
              "load_checkpoint of the last checkpoint");
        if (step != ram_trainer_steps(r.t) || step < 1 || step > STEPS)
            die("the checkpoint's step count is inconsistent%s%s", "", "");
        teardown(&r);
        /* ...is exactly what the uninterrupted run saved at that step... */
        char name[64];
        snprintf(name, sizeof name, "step-%03ld.ckpt", step);
        if (!same_file(ckpt, path_in(refdir, name)))
            die("the checkpoint differs from the reference's %s%s", name, "");
        /* ...and resumes to the same final model. */
        empty_dir(verdir);
        copy_file(ckpt, ver_ckpt);
        finish_job(start_job(verdir, NULL), "resumed run");
        if (!same_file(ver_final, ref_final))
            die("resuming from step %s gave another model%s", name, "");
        checked++;
        done = step;
        /* Near the end, start the chain over so kills keep landing all
         * through a run rather than piling up in the last step's start-up. */
        if (done >= STEPS - 2) {
            empty_dir(rundir);
            done = 0;
        }
    }
    printf("crash_safety: seed %u, reference run %.2f s of %d steps; %d kills (%d aimed at a "
           "save): %d "
           "landed during a save (temporary file left), %d before the first checkpoint; %d runs "
           "finished before "
           "their kill, with the reference model; %d checkpoints intact and resumed to the "
           "reference model\n",
           seed, ref_time, STEPS, kills, n_aimed, in_save, before_first, finished, checked);
    empty_dir(refdir);
    empty_dir(rundir);
    empty_dir(verdir);
    rmdir(refdir);
    rmdir(rundir);
    rmdir(verdir);
    rmdir(top);
    if (kills >= 20 && in_save == 0) die("no kill landed during a save%s%s", "", "");
    return 0;
}
