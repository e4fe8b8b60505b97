/*
 * Loads the provider library the way the PHP extension does (dlopen + the
 * one exported getter) and checks the table from C: the calling conventions
 * of every member, 32 pthreads racing set_nx on one key with exactly one
 * winner in every round, and a forked child that gets EPHPM_KV_E_FORKED
 * instead of hanging in a Go runtime that did not survive the fork.
 * Then the session members: wait, set_nx_wait, set_guarded, del_guarded,
 * expire, set_nx_wait_get, set_guarded_release, the fenced session members
 * (set_nx_wait_get_fenced, set_fenced_release, del_fenced_release),
 * expire_guarded_release, and 100 threads playing "request" on one session
 * through the real backoff. Then the batch
 * members: get_many, set_many. Then the fencing members: fences that only
 * grow, across a release and a flush, a stale fenced write refused, and 8
 * pthreads taking one lock in turn, each grant's fence above the one before.
 * Then the read/write lock members: readers share, a waiting writer's claim
 * refuses new readers and the last reader's release lets it in, and 8
 * pthreads (2 writers) that never overlap, each grant's fence above those
 * before it. Then scan: every key of a prefix once over its pages, its
 * records' fields, the locks' walk, TOO_SMALL and its arguments' limits.
 *
 * Usage: kv_table_test /path/to/libephpm.so
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ephpm_kv.h"

static const ephpm_kv_ops *ops;
static int passed, failed;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (cond) {                                                    \
            passed++;                                                  \
        } else {                                                       \
            failed++;                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
        }                                                              \
    } while (0)

#define S(lit) (lit), (sizeof(lit) - 1)

static void load(const char *path)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(2);
    }
    ephpm_kv_get_ops_fn get_ops = (ephpm_kv_get_ops_fn)dlsym(handle, EPHPM_KV_GET_OPS_SYMBOL);
    if (get_ops == NULL) {
        fprintf(stderr, "dlsym %s: %s\n", EPHPM_KV_GET_OPS_SYMBOL, dlerror());
        exit(2);
    }
    ops = get_ops();
    CHECK(ops->abi_version == EPHPM_KV_ABI_VERSION, "abi_version %u", ops->abi_version);
    CHECK(ops->struct_size >= EPHPM_KV_OPS_V1_SIZE, "struct_size %u", ops->struct_size);
    CHECK(EPHPM_KV_OPS_HAS(ops, del_if_eq), "v1 members present");
}

/* Whether this thread's last_error message contains want. */
static bool last_error_says(const char *want)
{
    char msg[512];
    size_t n = 0;
    if (ops->last_error(msg, sizeof msg - 1, &n) != EPHPM_KV_OK) {
        return false;
    }
    msg[n] = '\0';
    return strstr(msg, want) != NULL;
}

static void test_members(void)
{
    char buf[16];
    size_t len = 99;

    CHECK(ops->get(S("c:k"), buf, sizeof buf, &len) == EPHPM_KV_MISS, "miss");
    CHECK(len == 0, "miss sets length 0, got %zu", len);

    CHECK(ops->set(S("c:k"), S("hello"), 0) == EPHPM_KV_OK, "set");
    CHECK(ops->get(S("c:k"), buf, sizeof buf, &len) == EPHPM_KV_OK, "hit");
    CHECK(len == 5 && memcmp(buf, "hello", 5) == 0, "value %.*s", (int)len, buf);

    /* Too small: the length comes back and nothing is copied. */
    memset(buf, 'z', sizeof buf);
    CHECK(ops->get(S("c:k"), buf, 2, &len) == EPHPM_KV_TOO_SMALL, "too small");
    CHECK(len == 5 && buf[0] == 'z', "need 5, got %zu", len);
    CHECK(ops->get(S("c:k"), NULL, 0, &len) == EPHPM_KV_TOO_SMALL && len == 5, "size probe");

    /* Binary-safe keys: "b\0x" and "b\0y" are different keys. */
    CHECK(ops->set(S("b\0x"), S("\0one\0"), 0) == EPHPM_KV_OK, "set binary");
    CHECK(ops->set(S("b\0y"), S("two"), 0) == EPHPM_KV_OK, "set binary 2");
    CHECK(ops->get(S("b\0x"), buf, sizeof buf, &len) == EPHPM_KV_OK, "get binary");
    CHECK(len == 5 && memcmp(buf, "\0one\0", 5) == 0, "binary value");
    CHECK(ops->get(S("b"), buf, sizeof buf, &len) == EPHPM_KV_MISS, "not cut at NUL");

    /* set_nx and del_if_eq. */
    CHECK(ops->set_nx(S("c:lock"), S("tokA"), 30000) == EPHPM_KV_OK, "set_nx wins");
    CHECK(ops->set_nx(S("c:lock"), S("tokB"), 30000) == EPHPM_KV_EXISTS, "set_nx loses");
    CHECK(ops->del_if_eq(S("c:lock"), S("tokB")) == EPHPM_KV_MISS, "wrong token");
    CHECK(ops->del_if_eq(S("c:lock"), S("tokA")) == EPHPM_KV_OK, "right token");
    CHECK(ops->del_if_eq(S("c:lock"), S("tokA")) == EPHPM_KV_MISS, "already gone");

    CHECK(ops->del(S("c:k")) == EPHPM_KV_OK, "del");
    CHECK(ops->del(S("c:k")) == EPHPM_KV_MISS, "del again");

    /* Invalid arguments change nothing. */
    /* Each says why in last_error. */
    CHECK(ops->set(S(""), S("v"), 0) == EPHPM_KV_E_INVALID, "empty key");
    CHECK(last_error_says("key length 0"), "empty key: last_error says why");
    CHECK(ops->set(NULL, 3, S("v"), 0) == EPHPM_KV_E_INVALID, "NULL key");
    CHECK(last_error_says("set: a required pointer is NULL"), "NULL key: last_error says why");
    CHECK(ops->set(S("c:k"), S("v"), -1) == EPHPM_KV_E_INVALID, "negative ttl");
    CHECK(last_error_says("ttl -1ms is outside"), "negative ttl: last_error says why");
    CHECK(ops->set(S("c:k"), S("v"), EPHPM_KV_MAX_TTL_MS + 1) == EPHPM_KV_E_INVALID, "ttl over max");
    CHECK(ops->set(S("c:k"), S("v"), INT64_MAX) == EPHPM_KV_E_INVALID, "ttl overflow");
    CHECK(last_error_says("ms is beyond"), "ttl overflow: last_error says why");
    CHECK(ops->set(S("c:k"), "", SIZE_MAX, 0) == EPHPM_KV_E_INVALID, "length overflow");
    CHECK(last_error_says("a length of"), "length overflow: last_error says why");
    CHECK(ops->get(S("c:k"), NULL, 4, &len) == EPHPM_KV_E_INVALID, "NULL buffer");
    CHECK(ops->get(S("c:k"), buf, sizeof buf, NULL) == EPHPM_KV_E_INVALID, "NULL length");
    char *big = calloc(1, EPHPM_KV_MAX_KEY_LEN + 1);
    CHECK(ops->set(big, EPHPM_KV_MAX_KEY_LEN + 1, S("v"), 0) == EPHPM_KV_E_INVALID, "long key");
    CHECK(ops->set(big, EPHPM_KV_MAX_KEY_LEN, S("v"), 0) == EPHPM_KV_OK, "max key");
    free(big);
    CHECK(ops->get(S("c:k"), buf, sizeof buf, &len) == EPHPM_KV_MISS, "store unchanged");
}

enum { RACERS = 32, ROUNDS = 300 };

static pthread_barrier_t start_line, finish_line;
static int race_round;
static int race_rc[RACERS];

static void *racer(void *arg)
{
    int id = (int)(intptr_t)arg;
    char key[32], value[16];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&start_line);
        int klen = snprintf(key, sizeof key, "race:%d", race_round);
        int vlen = snprintf(value, sizeof value, "%d", id);
        race_rc[id] = ops->set_nx(key, (size_t)klen, value, (size_t)vlen, 60000);
        pthread_barrier_wait(&finish_line);
    }
    return NULL;
}

static void test_set_nx_race(void)
{
    pthread_t threads[RACERS];
    pthread_barrier_init(&start_line, NULL, RACERS + 1);
    pthread_barrier_init(&finish_line, NULL, RACERS + 1);
    for (int i = 0; i < RACERS; i++) {
        pthread_create(&threads[i], NULL, racer, (void *)(intptr_t)i);
    }
    int bad_rounds = 0;
    for (int r = 0; r < ROUNDS; r++) {
        race_round = r;
        pthread_barrier_wait(&start_line); /* release all racers together */
        pthread_barrier_wait(&finish_line);
        int winners = 0, winner = -1, others = 0;
        for (int i = 0; i < RACERS; i++) {
            if (race_rc[i] == EPHPM_KV_OK) {
                winners++;
                winner = i;
            } else if (race_rc[i] == EPHPM_KV_EXISTS) {
                others++;
            }
        }
        char key[32], buf[16];
        size_t len = 0;
        int klen = snprintf(key, sizeof key, "race:%d", r);
        ops->get(key, (size_t)klen, buf, sizeof buf, &len);
        if (winners != 1 || others != RACERS - 1 || atoi((buf[len] = 0, buf)) != winner) {
            bad_rounds++;
            fprintf(stderr, "round %d: %d winners, %d losers, value %s\n", r, winners, others, buf);
        }
    }
    for (int i = 0; i < RACERS; i++) {
        pthread_join(threads[i], NULL);
    }
    CHECK(bad_rounds == 0, "%d of %d rounds without exactly one winner", bad_rounds, ROUNDS);
}

static void test_forked_child(void)
{
    CHECK(ops->set(S("fork:k"), S("parent"), 0) == EPHPM_KV_OK, "set before fork");
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); /* a hang in the child fails the test instead of blocking it */
        char buf[16];
        size_t len;
        int ok = ops->set_nx(S("fork:child"), S("c"), 0) == EPHPM_KV_E_FORKED
              && ops->get(S("fork:k"), buf, sizeof buf, &len) == EPHPM_KV_E_FORKED
              && ops->set(S("fork:k"), S("child"), 0) == EPHPM_KV_E_FORKED
              && ops->del(S("fork:k")) == EPHPM_KV_E_FORKED
              && ops->del_if_eq(S("fork:k"), S("parent")) == EPHPM_KV_E_FORKED;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child status %#x (signal %d)", status, WIFSIGNALED(status) ? WTERMSIG(status) : 0);

    char buf[16];
    size_t len = 0;
    CHECK(ops->get(S("fork:k"), buf, sizeof buf, &len) == EPHPM_KV_OK
          && len == 6 && memcmp(buf, "parent", 6) == 0, "parent unaffected");
    CHECK(ops->set_nx(S("fork:after"), S("p"), 0) == EPHPM_KV_OK, "parent still works");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *delete_after_50ms(void *key)
{
    usleep(50000);
    ops->del((const char *)key, strlen((const char *)key));
    return NULL;
}

static void test_session_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, expire), "session members present (size %u)", ops->struct_size);

    /* wait */
    CHECK(ops->wait(S("w:free"), 1000) == EPHPM_KV_OK, "wait on a free key");
    CHECK(ops->set(S("w:held"), S("x"), 0) == EPHPM_KV_OK, "hold");
    double t0 = now_ms();
    CHECK(ops->wait(S("w:held"), 30) == EPHPM_KV_EXISTS, "wait times out");
    CHECK(now_ms() - t0 >= 29, "waited %.1f ms", now_ms() - t0);
    /* Woken by the delete, long before its 600 s: the 300 s bound is a hang
     * catch, not a speed bound. */
    pthread_t deleter;
    pthread_create(&deleter, NULL, delete_after_50ms, "w:held");
    t0 = now_ms();
    CHECK(ops->wait(S("w:held"), 600000) == EPHPM_KV_OK, "wait wakes on delete");
    CHECK(now_ms() - t0 < 300000, "woke after %.1f ms", now_ms() - t0);
    pthread_join(deleter, NULL);
    CHECK(ops->wait(S("w:held"), -1) == EPHPM_KV_E_INVALID, "negative timeout");

    /* set_nx_wait: a budget that ends before the lock's TTL is refused
     * (unless the host took the TTL's 200 ms to get there: then it may have
     * lapsed, not asserted); a long one gets the lock once the TTL passed,
     * not before, and not at the end of its budget (300 s: a hang catch).
     * Timed from before the TTL starts. */
    t0 = now_ms();
    CHECK(ops->set_nx(S("w:lock"), S("old"), 200) == EPHPM_KV_OK, "lock with 200 ms TTL");
    int rc = ops->set_nx_wait(S("w:lock"), S("new"), 30000, 20);
    CHECK(rc == EPHPM_KV_EXISTS || (rc == EPHPM_KV_OK && now_ms() - t0 >= 190), "budget too short: %d after %.1f ms",
          rc, now_ms() - t0);
    if (rc == EPHPM_KV_EXISTS) {
        CHECK(ops->set_nx_wait(S("w:lock"), S("new"), 30000, 600000) == EPHPM_KV_OK, "acquired when the TTL passed");
        CHECK(now_ms() - t0 >= 190 && now_ms() - t0 < 300000, "after %.1f ms", now_ms() - t0);
    }
    CHECK(ops->del_if_eq(S("w:lock"), S("new")) == EPHPM_KV_OK, "holds the new token");
    CHECK(ops->set_nx_wait(S("w:lock"), S("v"), 0, -1) == EPHPM_KV_E_INVALID, "negative budget");

    /* set_guarded */
    CHECK(ops->set_guarded(S("w:data"), S("v1"), 0, S("w:g"), S("tok")) == EPHPM_KV_MISS, "no guard");
    CHECK(ops->set_nx(S("w:g"), S("tok"), 0) == EPHPM_KV_OK, "guard");
    CHECK(ops->set_guarded(S("w:data"), S("v1"), 0, S("w:g"), S("bad")) == EPHPM_KV_MISS, "wrong token");
    CHECK(ops->set_guarded(S("w:data"), S("v1"), 0, S("w:g"), S("tok")) == EPHPM_KV_OK, "guarded write");
    char buf[8];
    size_t len = 0;
    CHECK(ops->get(S("w:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 2, "written");
    CHECK(ops->set_guarded(S("w:data"), S("v"), 0, NULL, 2, S("tok")) == EPHPM_KV_E_INVALID, "NULL guard");

    /* del_guarded */
    CHECK(ops->set(S("w:gone"), S("v"), 0) == EPHPM_KV_OK, "data to delete");
    CHECK(ops->del_guarded(S("w:gone"), S("w:g"), S("bad")) == EPHPM_KV_MISS, "wrong token: refused");
    CHECK(ops->exists(S("w:gone")) == EPHPM_KV_OK, "a refused delete changes nothing");
    CHECK(ops->del_guarded(S("w:gone"), S("w:nog"), S("tok")) == EPHPM_KV_MISS, "no guard: refused");
    CHECK(ops->del_guarded(S("w:gone"), S("w:g"), S("tok")) == EPHPM_KV_OK, "guarded delete");
    CHECK(ops->exists(S("w:gone")) == EPHPM_KV_MISS, "deleted");
    CHECK(ops->del_guarded(S("w:gone"), S("w:g"), S("tok")) == EPHPM_KV_OK, "nothing to delete, guard held");
    CHECK(ops->del_guarded(S("w:gone"), S("w:g"), NULL, 3) == EPHPM_KV_E_INVALID, "NULL token");
    CHECK(ops->del_guarded(S("w:gone"), "", 0, S("tok")) == EPHPM_KV_E_INVALID, "empty guard key");

    /* expire */
    CHECK(ops->expire(S("w:none"), 1000) == EPHPM_KV_MISS, "expire absent");
    CHECK(ops->expire(S("w:data"), 100) == EPHPM_KV_OK, "expire");
    usleep(150000);
    CHECK(ops->get(S("w:data"), buf, sizeof buf, &len) == EPHPM_KV_MISS, "expired");
}

static void test_session_round_trip_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, set_guarded_release), "two-round-trip members present (size %u)",
          ops->struct_size);
    char buf[8];
    size_t len = 99;

    /* set_nx_wait_get */
    CHECK(ops->set_nx_wait_get(S("r:lock"), S("tok"), 30000, 0, S("r:data"), buf, sizeof buf, &len)
          == EPHPM_KV_MISS && len == 0, "locked, no data");
    CHECK(ops->set_nx_wait_get(S("r:lock"), S("two"), 30000, 20, S("r:data"), buf, sizeof buf, &len)
          == EPHPM_KV_EXISTS, "held: EXISTS after the budget");
    CHECK(ops->set(S("r:data"), S("hello"), 0) == EPHPM_KV_OK, "data");
    CHECK(ops->del_if_eq(S("r:lock"), S("tok")) == EPHPM_KV_OK, "release");
    CHECK(ops->set_nx_wait_get(S("r:lock"), S("tok"), 30000, 0, S("r:data"), buf, sizeof buf, &len)
          == EPHPM_KV_OK && len == 5 && memcmp(buf, "hello", 5) == 0, "locked and read");
    CHECK(ops->del_if_eq(S("r:lock"), S("tok")) == EPHPM_KV_OK, "release");
    buf[0] = 'z';
    CHECK(ops->set_nx_wait_get(S("r:lock"), S("tok"), 30000, 0, S("r:data"), buf, 2, &len)
          == EPHPM_KV_TOO_SMALL && len == 5 && buf[0] == 'z', "locked, too small: the length, nothing copied");
    CHECK(ops->exists(S("r:lock")) == EPHPM_KV_OK, "and the lock is held");
    CHECK(ops->set_nx_wait_get(S("r:lock2"), S("tok"), 30000, 0, S("r:data"), NULL, 4, &len)
          == EPHPM_KV_E_INVALID, "NULL buffer");
    CHECK(ops->set_nx_wait_get(S("r:lock2"), S("tok"), 30000, 0, "", 0, buf, sizeof buf, &len)
          == EPHPM_KV_E_INVALID, "empty data key");
    CHECK(ops->exists(S("r:lock2")) == EPHPM_KV_MISS, "a refused call takes no lock");

    /* set_guarded_release */
    CHECK(ops->set_guarded_release(S("r:data"), S("v2"), 0, S("r:lock"), S("bad")) == EPHPM_KV_MISS,
          "wrong token");
    CHECK(ops->get(S("r:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 5, "unchanged");
    CHECK(ops->exists(S("r:lock")) == EPHPM_KV_OK, "still held");
    CHECK(ops->set_guarded_release(S("r:data"), S("v2"), 0, S("r:lock"), S("tok")) == EPHPM_KV_OK,
          "written and released");
    CHECK(ops->get(S("r:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 2 && memcmp(buf, "v2", 2) == 0,
          "written");
    CHECK(ops->exists(S("r:lock")) == EPHPM_KV_MISS, "released");
    CHECK(ops->set_guarded_release(S("r:data"), S("v3"), 0, S("r:lock"), S("tok")) == EPHPM_KV_MISS,
          "no guard any more");
    CHECK(ops->set_guarded_release(S("r:data"), S("v"), 0, NULL, 2, S("tok")) == EPHPM_KV_E_INVALID,
          "NULL guard");
}

static void test_fenced_session_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, del_fenced_release), "fenced session members present (size %u)",
          ops->struct_size);
    char buf[16];
    size_t len = 99;
    int64_t f1 = 0, f2 = 0, f = -1;

    /* set_nx_wait_get_fenced: a's lock of 1 s refuses b while it lives
     * (unless the host took that second to get there: then the rest, which
     * needs a to have been the last grant, is not asserted). */
    CHECK(ops->set_nx_wait_get_fenced(S("fs:lock"), S("a"), 1000, 0, S("fs:data"), buf, sizeof buf, &len, NULL)
          == EPHPM_KV_E_INVALID, "NULL fence");
    double t0 = now_ms();
    CHECK(ops->set_nx_wait_get_fenced(S("fs:lock"), S("a"), 1000, 0, S("fs:data"), buf, sizeof buf, &len, &f1)
          == EPHPM_KV_MISS && len == 0 && f1 > 0, "locked, no data, fence %lld", (long long)f1);
    CHECK(ops->fence(S("fs:lock"), &f) == EPHPM_KV_OK && f == f1, "the latest grant: %lld", (long long)f);
    int rc = ops->set_nx_wait_get_fenced(S("fs:lock"), S("b"), 50, 0, S("fs:data"), buf, sizeof buf, &len, &f);
    if (rc != EPHPM_KV_EXISTS && now_ms() - t0 >= 990) {
        printf("fenced session members: the host took a's whole 1 s TTL to get to b: the rest is not asserted\n");
        return;
    }
    CHECK(rc == EPHPM_KV_EXISTS && f == 0, "held: EXISTS, no fence");

    /* set_fenced_release after the lock expired, nobody granted since */
    usleep(1100000);
    CHECK(ops->exists(S("fs:lock")) == EPHPM_KV_MISS, "expired");
    CHECK(ops->set_fenced_release(S("fs:data"), S("by a"), 0, S("fs:lock"), f1, S("a")) == EPHPM_KV_OK,
          "an overrun without contender writes");
    CHECK(ops->get(S("fs:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4, "written");

    /* another fenced grant since: refused */
    CHECK(ops->set_nx_wait_get_fenced(S("fs:lock"), S("b"), 30000, 0, S("fs:data"), buf, sizeof buf, &len, &f2)
          == EPHPM_KV_OK && len == 4 && memcmp(buf, "by a", 4) == 0 && f2 > f1, "b locked and read");
    CHECK(ops->set_fenced_release(S("fs:data"), S("late"), 0, S("fs:lock"), f1, S("a")) == EPHPM_KV_MISS,
          "a stale fence is refused");
    CHECK(ops->del_fenced_release(S("fs:data"), S("fs:lock"), f1, S("a")) == EPHPM_KV_MISS, "and its removal");
    CHECK(ops->set_fenced_release(S("fs:data"), S("x"), 0, S("fs:lock"), f2, S("a")) == EPHPM_KV_MISS,
          "the latest fence with another holder's token");
    CHECK(ops->get(S("fs:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4 && memcmp(buf, "by a", 4) == 0
          && ops->exists(S("fs:lock")) == EPHPM_KV_OK, "a refused call changes nothing");
    CHECK(ops->set_fenced_release(S("fs:data"), S("by b"), 60000, S("fs:lock"), f2, S("b")) == EPHPM_KV_OK
          && ops->exists(S("fs:lock")) == EPHPM_KV_MISS, "b writes and releases");

    /* a holder whose grant minted no fence: refused */
    CHECK(ops->set_nx(S("fs:lock"), S("c"), 30000) == EPHPM_KV_OK, "c takes the lock unfenced");
    CHECK(ops->set_fenced_release(S("fs:data"), S("x"), 0, S("fs:lock"), f2, S("b")) == EPHPM_KV_MISS
          && ops->del_fenced_release(S("fs:data"), S("fs:lock"), f2, S("b")) == EPHPM_KV_MISS,
          "c holds the lock");
    CHECK(ops->del_if_eq(S("fs:lock"), S("c")) == EPHPM_KV_OK, "c releases");
    CHECK(ops->del_fenced_release(S("fs:data"), S("fs:lock"), f2, S("b")) == EPHPM_KV_OK
          && ops->exists(S("fs:data")) == EPHPM_KV_MISS, "del_fenced_release");

    CHECK(ops->set_fenced_release(S("fs:data"), S("x"), 0, S("fs:lock"), 0, S("b")) == EPHPM_KV_E_INVALID,
          "fence 0");
    CHECK(ops->del_fenced_release(S("fs:data"), S("fs:lock"), -1, S("b")) == EPHPM_KV_E_INVALID, "fence -1");
    CHECK(ops->set_fenced_release(S("fs:data"), S("x"), 0, NULL, 2, f2, S("b")) == EPHPM_KV_E_INVALID,
          "NULL lock");
    CHECK(ops->del_fenced_release(S("fs:data"), S("fs:lock"), f2, NULL, 1) == EPHPM_KV_E_INVALID, "NULL token");
}

static void test_lazy_write_member(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, expire_guarded_release), "expire_guarded_release present (size %u)",
          ops->struct_size);
    char buf[8];
    size_t len = 0;
    int64_t ttl = 0;

    /* Data of 30 s, refreshed to a minute: no host's pace lets it lapse first. */
    CHECK(ops->set(S("z:data"), S("same"), 30000) == EPHPM_KV_OK, "data");
    CHECK(ops->set_nx(S("z:lock"), S("tok"), 30000) == EPHPM_KV_OK, "locked");
    CHECK(ops->expire_guarded_release(S("z:data"), 60000, S("z:lock"), S("bad")) == EPHPM_KV_MISS,
          "wrong token");
    CHECK(ops->pttl(S("z:data"), &ttl) == EPHPM_KV_OK && ttl <= 30000, "not refreshed");
    CHECK(ops->exists(S("z:lock")) == EPHPM_KV_OK, "still held");
    CHECK(ops->expire_guarded_release(S("z:none"), 60000, S("z:lock"), S("tok")) == EPHPM_KV_MISS,
          "no data: nothing changed");
    CHECK(ops->exists(S("z:lock")) == EPHPM_KV_OK, "still held");
    CHECK(ops->expire_guarded_release(S("z:data"), 60000, S("z:lock"), S("tok")) == EPHPM_KV_OK,
          "refreshed and released");
    CHECK(ops->pttl(S("z:data"), &ttl) == EPHPM_KV_OK && ttl > 30000, "refreshed");
    CHECK(ops->get(S("z:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4 && memcmp(buf, "same", 4) == 0,
          "the value kept");
    CHECK(ops->exists(S("z:lock")) == EPHPM_KV_MISS, "released");
    CHECK(ops->expire_guarded_release(S("z:data"), 60000, S("z:lock"), S("tok")) == EPHPM_KV_MISS,
          "no guard any more");
    CHECK(ops->expire_guarded_release(S("z:data"), 60000, NULL, 2, S("tok")) == EPHPM_KV_E_INVALID,
          "NULL guard");
    CHECK(ops->expire_guarded_release(S("z:data"), -1, S("z:lock"), S("tok")) == EPHPM_KV_E_INVALID,
          "negative TTL");
}

/* 100 threads play "request" on one session: lock with a fresh random
 * token through set_nx_wait (the real backoff), read the counter, hold the
 * lock a moment, write counter+1 guarded by the lock, release. In rounds 1
 * and 4 each request does it in two calls, set_nx_wait_get and
 * set_guarded_release; in rounds 2 and 5 with the fenced pair,
 * set_nx_wait_get_fenced and set_fenced_release, as the session handler
 * does with a library that has them. */
enum { REQUESTS = 100, SESSION_ROUNDS = 6 };
enum { FOUR_MEMBERS, COMBINED_MEMBERS, FENCED_MEMBERS };

static int session_members;
static pthread_barrier_t request_start;
static char session_data_key[64], session_lock_key[64];
static int seen_counter[REQUESTS];
static int request_failures;

static void *request(void *arg)
{
    int id = (int)(intptr_t)arg;
    unsigned char raw[16];
    char token[33];
    if (getrandom(raw, sizeof raw, 0) != sizeof raw) {
        __atomic_add_fetch(&request_failures, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (int i = 0; i < 16; i++) {
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    }
    size_t dlen = strlen(session_data_key), llen = strlen(session_lock_key);
    pthread_barrier_wait(&request_start);

    char buf[32];
    size_t len = 0;
    int counter = 0, rc;
    int64_t fence = 0;
    if (session_members == FENCED_MEMBERS) {
        rc = ops->set_nx_wait_get_fenced(session_lock_key, llen, token, 32, 30000, 600000,
                                         session_data_key, dlen, buf, sizeof buf - 1, &len, &fence);
    } else if (session_members == COMBINED_MEMBERS) {
        rc = ops->set_nx_wait_get(session_lock_key, llen, token, 32, 30000, 600000,
                                  session_data_key, dlen, buf, sizeof buf - 1, &len);
    } else {
        rc = ops->set_nx_wait(session_lock_key, llen, token, 32, 30000, 600000); /* waits: hang catches */
        if (rc == EPHPM_KV_OK) {
            rc = ops->get(session_data_key, dlen, buf, sizeof buf - 1, &len);
        }
    }
    if ((rc != EPHPM_KV_OK && rc != EPHPM_KV_MISS) || (session_members == FENCED_MEMBERS && fence <= 0)) {
        __atomic_add_fetch(&request_failures, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    if (rc == EPHPM_KV_OK) {
        buf[len] = '\0';
        counter = atoi(buf);
    }
    seen_counter[id] = counter;
    usleep(200); /* the request's work, under the lock */
    int n = snprintf(buf, sizeof buf, "%d", counter + 1);
    switch (session_members) {
    case FENCED_MEMBERS:
        rc = ops->set_fenced_release(session_data_key, dlen, buf, (size_t)n, 60000,
                                     session_lock_key, llen, fence, token, 32);
        break;
    case COMBINED_MEMBERS:
        rc = ops->set_guarded_release(session_data_key, dlen, buf, (size_t)n, 60000,
                                      session_lock_key, llen, token, 32);
        break;
    default:
        rc = ops->set_guarded(session_data_key, dlen, buf, (size_t)n, 60000,
                              session_lock_key, llen, token, 32);
        if (rc == EPHPM_KV_OK) {
            rc = ops->del_if_eq(session_lock_key, llen, token, 32);
        }
    }
    if (rc != EPHPM_KV_OK) {
        __atomic_add_fetch(&request_failures, 1, __ATOMIC_RELAXED);
    }
    if (session_members == FENCED_MEMBERS && ops->exists(session_lock_key, llen) == EPHPM_KV_OK) {
        /* The next request may hold it already; but never this one's token. */
        size_t hl = 0;
        char held[40];
        if (ops->get(session_lock_key, llen, held, sizeof held, &hl) == EPHPM_KV_OK && hl == 32
            && memcmp(held, token, 32) == 0) {
            __atomic_add_fetch(&request_failures, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void test_session_requests(void)
{
    for (int round = 0; round < SESSION_ROUNDS; round++) {
        snprintf(session_data_key, sizeof session_data_key, "session:c-round-%d", round);
        snprintf(session_lock_key, sizeof session_lock_key, "session_lock:c-round-%d", round);
        memset(seen_counter, -1, sizeof seen_counter);
        request_failures = 0;
        session_members = round % 3;
        pthread_barrier_init(&request_start, NULL, REQUESTS);
        pthread_t threads[REQUESTS];
        double t0 = now_ms();
        for (int i = 0; i < REQUESTS; i++) {
            pthread_create(&threads[i], NULL, request, (void *)(intptr_t)i);
        }
        for (int i = 0; i < REQUESTS; i++) {
            pthread_join(threads[i], NULL);
        }
        double took = now_ms() - t0;
        pthread_barrier_destroy(&request_start);

        char buf[32];
        size_t len = 0;
        int final = -1;
        if (ops->get(session_data_key, strlen(session_data_key), buf, sizeof buf - 1, &len) == EPHPM_KV_OK) {
            buf[len] = '\0';
            final = atoi(buf);
        }
        int distinct = 1;
        char seen[REQUESTS] = {0};
        for (int i = 0; i < REQUESTS; i++) {
            if (seen_counter[i] < 0 || seen_counter[i] >= REQUESTS || seen[seen_counter[i]]++) {
                distinct = 0;
            }
        }
        CHECK(request_failures == 0, "round %d: %d requests failed", round, request_failures);
        CHECK(final == REQUESTS, "round %d: counter %d, want %d", round, final, REQUESTS);
        CHECK(distinct, "round %d: every request saw a distinct counter", round);
        static const char *const how[] = {"four members", "set_nx_wait_get, set_guarded_release",
                                          "set_nx_wait_get_fenced, set_fenced_release"};
        printf("session round %d (%s): %d requests in %.1f ms\n", round, how[session_members], REQUESTS, took);
    }
}

static void test_key_api_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, configure), "key API members present (size %u)", ops->struct_size);
    int64_t n = 0;

    CHECK(ops->exists(S("k:none")) == EPHPM_KV_MISS, "exists: absent");
    CHECK(ops->set(S("k:e"), S("v"), 0) == EPHPM_KV_OK && ops->exists(S("k:e")) == EPHPM_KV_OK, "exists");
    CHECK(ops->pttl(S("k:e"), &n) == EPHPM_KV_OK && n == -1, "pttl: no expiry (%lld)", (long long)n);
    CHECK(ops->pttl(S("k:none"), &n) == EPHPM_KV_MISS, "pttl: absent");
    CHECK(ops->pttl(S("k:e"), NULL) == EPHPM_KV_E_INVALID, "pttl: NULL out");
    /* What is left of 30 s: all of it, less the time this host took since
     * the set (measured, not bounded); refreshed past it. */
    double t0 = now_ms();
    CHECK(ops->set_nx(S("k:lock"), S("tok"), 30000) == EPHPM_KV_OK, "lock");
    CHECK(ops->pttl(S("k:lock"), &n) == EPHPM_KV_OK && n > 30000 - (now_ms() - t0) - 10 && n <= 30000,
          "pttl %lld after %.1f ms", (long long)n, now_ms() - t0);
    CHECK(ops->expire_if_eq(S("k:lock"), S("bad"), 60000) == EPHPM_KV_MISS, "expire_if_eq: wrong token");
    CHECK(ops->expire_if_eq(S("k:lock"), S("tok"), 60000) == EPHPM_KV_OK, "expire_if_eq");
    CHECK(ops->pttl(S("k:lock"), &n) == EPHPM_KV_OK && n > 30000, "refreshed to %lld", (long long)n);

    CHECK(ops->incr_by(S("k:n"), 5, 0, &n) == EPHPM_KV_OK && n == 5, "incr_by creates");
    CHECK(ops->incr_by(S("k:n"), -7, 0, &n) == EPHPM_KV_OK && n == -2, "incr_by");
    CHECK(ops->incr_by(S("k:e"), 1, 0, &n) == EPHPM_KV_E_NOT_INTEGER, "not an integer");
    CHECK(ops->set(S("k:max"), S("9223372036854775807"), 0) == EPHPM_KV_OK, "max");
    CHECK(ops->incr_by(S("k:max"), 1, 0, &n) == EPHPM_KV_E_OVERFLOW, "overflow");

    /* stats: an older caller's smaller struct is filled only as far as it goes. */
    ephpm_kv_stats st;
    memset(&st, 0x5a, sizeof st);
    st.struct_size = sizeof st;
    CHECK(ops->stats(&st) == EPHPM_KV_OK, "stats");
    CHECK(strcmp(st.backend, "memory") == 0 && strlen(st.instance_id) == 36, "backend %s id %s", st.backend, st.instance_id);
    CHECK(st.keys > 0 && st.set_nx_wins > 0 && st.bytes_used > 0, "figures");
    memset(&st, 0x5a, sizeof st);
    st.struct_size = offsetof(ephpm_kv_stats, keys);
    CHECK(ops->stats(&st) == EPHPM_KV_OK && st.keys == (int64_t)0x5a5a5a5a5a5a5a5a, "older struct not overrun");
    CHECK(ops->stats(NULL) == EPHPM_KV_E_INVALID, "NULL stats");

    /* configure: a small limit, a write that does not fit, the old value kept. */
    CHECK(ops->configure(S("bogus"), S("1")) == EPHPM_KV_E_INVALID, "unknown setting");
    CHECK(ops->configure(S("eviction"), S("sometimes")) == EPHPM_KV_E_INVALID, "bad policy");
    CHECK(ops->flush() == EPHPM_KV_OK && ops->exists(S("k:e")) == EPHPM_KV_MISS, "flush");
    CHECK(ops->set(S("k:big"), S("small"), 0) == EPHPM_KV_OK, "before limit");
    CHECK(ops->configure(S("memory_limit"), S("200")) == EPHPM_KV_OK, "limit");
    static char big[300];
    memset(big, 'x', sizeof big);
    CHECK(ops->set(S("k:big"), big, sizeof big, 0) == EPHPM_KV_E_NOMEM, "does not fit");
    char buf[16];
    size_t len = 0;
    CHECK(ops->get(S("k:big"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 5, "old value kept");
    CHECK(ops->configure(S("memory_limit"), S("0")) == EPHPM_KV_OK, "no limit");
    CHECK(ops->configure(S("compression"), S("lz4")) == EPHPM_KV_OK
          && ops->configure(S("compression_min_size"), S("64")) == EPHPM_KV_OK, "compression on");
    CHECK(ops->set(S("k:big"), big, sizeof big, 0) == EPHPM_KV_OK, "compressed write");
    static char back[300];
    CHECK(ops->get(S("k:big"), back, sizeof back, &len) == EPHPM_KV_OK && len == sizeof big
          && memcmp(back, big, sizeof big) == 0, "decompressed read");
    CHECK(ops->del_if_eq(S("k:big"), big, sizeof big) == EPHPM_KV_OK, "compare on the logical value");
    CHECK(ops->configure(S("compression"), S("none")) == EPHPM_KV_OK, "compression off");
    CHECK(ops->configure(S("memory_limit"), S("64M")) == EPHPM_KV_OK
          && ops->configure(S("memory_limit"), S("0")) == EPHPM_KV_OK, "sizes as php.ini writes them");
    CHECK(ops->configure(S("Eviction"), S("noeviction")) == EPHPM_KV_E_INVALID
          && ops->configure(S("eviction"), S("NoEviction")) == EPHPM_KV_E_INVALID, "names and words are lowercase");

    /* "auto" outside a multi-process server is the in-process store, and
     * stats say so and why. */
    CHECK(ops->configure(S("sapi"), S("cli")) == EPHPM_KV_OK
          && ops->configure(S("backend"), S("auto")) == EPHPM_KV_OK, "auto under the CLI");
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK(ops->stats(&st) == EPHPM_KV_OK && strcmp(st.backend, "memory") == 0
          && strncmp(st.store, "memory", 6) == 0 && strstr(st.store, "cli") != NULL, "store: %s", st.store);
}

/* Appends a batch record (a uint32_t length, then the bytes) at *at. */
static void put_record(char *buf, size_t *at, const char *p, uint32_t len)
{
    memcpy(buf + *at, &len, sizeof len);
    memcpy(buf + *at + sizeof len, p, len);
    *at += sizeof len + len;
}

static void test_batch_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, get_many) && EPHPM_KV_OPS_HAS(ops, set_many), "batch members present");
    char req[256], out[256];
    size_t n = 0, len = 0, stored = 99;

    /* Two entries, one with an empty value, under a TTL. */
    put_record(req, &n, S("b:one"));
    put_record(req, &n, S("1"));
    put_record(req, &n, S("b:empty"));
    put_record(req, &n, "", 0);
    CHECK(ops->set_many(req, n, 2, 60000, &stored) == EPHPM_KV_OK && stored == 2, "set_many, stored %zu", stored);
    int64_t ttl = 0;
    CHECK(ops->pttl(S("b:empty"), &ttl) == EPHPM_KV_OK && ttl > 50000, "the batch's TTL, %lld", (long long)ttl);

    n = 0;
    put_record(req, &n, S("b:one"));
    put_record(req, &n, S("b:none"));
    put_record(req, &n, S("b:empty"));
    CHECK(ops->get_many(req, n, 3, out, sizeof out, &len) == EPHPM_KV_OK, "get_many");
    uint32_t l0, l1, l2;
    memcpy(&l0, out, 4);
    memcpy(&l1, out + 5, 4);
    memcpy(&l2, out + 9, 4);
    CHECK(len == 13 && l0 == 1 && out[4] == '1' && l1 == EPHPM_KV_BATCH_MISSING && l2 == 0,
          "records: len %zu, %u %u %u", len, l0, l1, l2);
    CHECK(ops->get_many(req, n, 3, out, 12, &len) == EPHPM_KV_TOO_SMALL && len == 13, "too small: %zu", len);
    CHECK(ops->get_many(req, n, 3, NULL, 0, &len) == EPHPM_KV_TOO_SMALL && len == 13, "no buffer: %zu", len);
    CHECK(ops->get_many(NULL, 0, 0, NULL, 0, &len) == EPHPM_KV_OK && len == 0, "an empty batch");

    /* Records that do not add up, and NULLs, are refused. */
    CHECK(ops->get_many(req, n, 2, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "count too small");
    CHECK(ops->get_many(req, n, 4, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "count too large");
    CHECK(ops->get_many(req, n - 1, 3, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "cut record");
    CHECK(last_error_says("batch record 2 says"), "cut record: last_error says why");
    CHECK(ops->get_many(req, n, (size_t)-1, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "huge count");
    CHECK(ops->get_many(NULL, 8, 1, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "NULL keys");
    CHECK(ops->get_many(req, n, 3, out, sizeof out, NULL) == EPHPM_KV_E_INVALID, "NULL out_len");
    CHECK(last_error_says("get_many: a required pointer is NULL"), "NULL out_len: last_error says why");
    n = 0;
    put_record(req, &n, "", 0);
    CHECK(ops->get_many(req, n, 1, out, sizeof out, &len) == EPHPM_KV_E_INVALID, "empty key");
    CHECK(last_error_says("batch key 0: "), "empty key: last_error says why");

    /* A bad entry anywhere writes nothing. */
    n = 0;
    put_record(req, &n, S("b:first"));
    put_record(req, &n, S("v"));
    put_record(req, &n, "", 0);
    put_record(req, &n, S("v"));
    CHECK(ops->set_many(req, n, 2, 0, &stored) == EPHPM_KV_E_INVALID && stored == 0, "empty key refused");
    CHECK(last_error_says("entry 1: "), "empty key: last_error names the entry");
    CHECK(ops->exists(S("b:first")) == EPHPM_KV_MISS, "nothing written");
    n = 0;
    put_record(req, &n, S("b:first"));
    uint32_t missing = EPHPM_KV_BATCH_MISSING;
    memcpy(req + n, &missing, 4);
    n += 4;
    CHECK(ops->set_many(req, n, 1, 0, &stored) == EPHPM_KV_E_INVALID, "MISSING is no value");
    CHECK(ops->set_many(req, 0, 1, 0, &stored) == EPHPM_KV_E_INVALID, "no entries for count 1");
    CHECK(ops->set_many(req, n, 1, -1, &stored) == EPHPM_KV_E_INVALID, "negative TTL");
    CHECK(ops->set_many(req, n, 1, 0, NULL) == EPHPM_KV_E_INVALID, "NULL stored");
    CHECK(ops->exists(S("b:first")) == EPHPM_KV_MISS, "still nothing written");
    ops->del(S("b:one"));
    ops->del(S("b:empty"));
}

static pthread_mutex_t fence_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t fence_last;
static int fence_bad, fence_grants;

static void *take_fenced_lock(void *arg)
{
    char tok[32];
    for (int r = 0; r < 50; r++) {
        int n = snprintf(tok, sizeof tok, "%ld:%d", (long)(intptr_t)arg, r);
        int64_t f = 0;
        if (ops->set_nx_wait_fenced(S("f:hot"), tok, (size_t)n, 60000, 600000, &f) != EPHPM_KV_OK) {
            __atomic_add_fetch(&fence_bad, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        pthread_mutex_lock(&fence_mu);
        if (f <= fence_last) {
            fence_bad++;
        }
        fence_last = f;
        fence_grants++;
        pthread_mutex_unlock(&fence_mu);
        ops->del_if_eq(S("f:hot"), tok, (size_t)n);
    }
    return NULL;
}

static void test_fence_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, set_fenced), "fencing members present (size %u)", ops->struct_size);
    int64_t f = -1, f1 = 0, f2 = 0;
    CHECK(ops->fence(S("f:lock"), &f) == EPHPM_KV_OK && f == 0, "never granted: %lld", (long long)f);
    CHECK(ops->fence(S("f:lock"), NULL) == EPHPM_KV_E_INVALID, "fence: NULL out");
    CHECK(ops->set_nx_wait_fenced(S("f:lock"), S("a"), 60000, 0, NULL) == EPHPM_KV_E_INVALID, "grant: NULL out");
    CHECK(ops->set_nx_wait_fenced(S("f:lock"), S("a"), 60000, 0, &f1) == EPHPM_KV_OK && f1 > 0, "grant %lld", (long long)f1);
    f = -1;
    CHECK(ops->set_nx_wait_fenced(S("f:lock"), S("b"), 60000, 20, &f) == EPHPM_KV_EXISTS && f == 0, "held: %lld", (long long)f);
    CHECK(ops->fence(S("f:lock"), &f) == EPHPM_KV_OK && f == f1, "latest %lld", (long long)f);
    CHECK(ops->set_fenced(S("f:data"), S("by a"), 0, S("f:lock"), f1) == EPHPM_KV_OK, "the holder writes");
    CHECK(ops->del_if_eq(S("f:lock"), S("a")) == EPHPM_KV_OK && ops->flush() == EPHPM_KV_OK, "release, flush");
    CHECK(ops->fence(S("f:lock"), &f) == EPHPM_KV_OK && f == f1, "flush keeps the fence: %lld", (long long)f);
    CHECK(ops->set_nx_wait_fenced(S("f:lock"), S("b"), 60000, 0, &f2) == EPHPM_KV_OK && f2 > f1,
          "next grant %lld after %lld", (long long)f2, (long long)f1);
    CHECK(ops->set_fenced(S("f:data"), S("stale"), 0, S("f:lock"), f1) == EPHPM_KV_MISS, "stale fence refused");
    CHECK(ops->exists(S("f:data")) == EPHPM_KV_MISS, "the refused write changed nothing");
    CHECK(ops->set_fenced(S("f:data"), S("by b"), 60000, S("f:lock"), f2) == EPHPM_KV_OK, "latest fence writes");
    CHECK(ops->set_fenced(S("f:data"), S("x"), 0, S("f:lock"), 0) == EPHPM_KV_E_INVALID, "fence 0");
    char buf[16];
    size_t len = 0;
    CHECK(ops->get(S("f:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4 && memcmp(buf, "by b", 4) == 0, "value");
    CHECK(ops->del_fenced(S("f:data"), S("f:lock"), f1) == EPHPM_KV_MISS && ops->exists(S("f:data")) == EPHPM_KV_OK,
          "del_fenced: stale fence refused");
    CHECK(ops->del_fenced(S("f:data"), S("f:lock"), f2) == EPHPM_KV_OK && ops->exists(S("f:data")) == EPHPM_KV_MISS,
          "del_fenced");
    CHECK(ops->del_fenced(S("f:data"), S("f:lock"), 0) == EPHPM_KV_E_INVALID, "del_fenced: fence 0");
    ops->del_if_eq(S("f:lock"), S("b"));

    pthread_t th[8];
    for (intptr_t i = 0; i < 8; i++) {
        pthread_create(&th[i], NULL, take_fenced_lock, (void *)i);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
    }
    CHECK(fence_bad == 0 && fence_grants == 400, "%d grants, %d out of order or failed", fence_grants, fence_bad);
}

static int rw_readers, rw_writers, rw_bad, rw_grants;
static int64_t rw_max_fence, rw_last_writer;

/* One of 8 threads taking "rw:hot" 30 times: threads 0 and 4 write, the
 * others read. A writer holds it alone, a reader only beside readers, and
 * each grant's fence exceeds every earlier grant's (a reader's: the
 * writer's before it). */
static void *take_rw_lock(void *arg)
{
    intptr_t i = (intptr_t)arg;
    int32_t mode = i % 4 == 0 ? EPHPM_KV_LOCK_EXCLUSIVE : EPHPM_KV_LOCK_SHARED;
    char tok[32];
    for (int r = 0; r < 30; r++) {
        int n = snprintf(tok, sizeof tok, "%ld:%d", (long)i, r);
        int64_t f = 0;
        if (ops->lock_acquire(S("rw:hot"), tok, (size_t)n, mode, 60000, 600000, &f) != EPHPM_KV_OK) {
            __atomic_add_fetch(&rw_bad, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (mode == EPHPM_KV_LOCK_EXCLUSIVE) {
            if (__atomic_add_fetch(&rw_writers, 1, __ATOMIC_SEQ_CST) != 1
                || __atomic_load_n(&rw_readers, __ATOMIC_SEQ_CST) != 0) {
                __atomic_add_fetch(&rw_bad, 1, __ATOMIC_SEQ_CST);
            }
        } else {
            __atomic_add_fetch(&rw_readers, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&rw_writers, __ATOMIC_SEQ_CST) != 0) {
                __atomic_add_fetch(&rw_bad, 1, __ATOMIC_SEQ_CST);
            }
        }
        pthread_mutex_lock(&fence_mu);
        if (mode == EPHPM_KV_LOCK_EXCLUSIVE ? f <= rw_max_fence : f <= rw_last_writer) {
            rw_bad++;
        }
        if (mode == EPHPM_KV_LOCK_EXCLUSIVE) {
            rw_last_writer = f;
        }
        rw_max_fence = f > rw_max_fence ? f : rw_max_fence;
        rw_grants++;
        pthread_mutex_unlock(&fence_mu);
        usleep(200);
        __atomic_sub_fetch(mode == EPHPM_KV_LOCK_EXCLUSIVE ? &rw_writers : &rw_readers, 1, __ATOMIC_SEQ_CST);
        if (ops->lock_release(S("rw:hot"), tok, (size_t)n) != EPHPM_KV_OK) {
            __atomic_add_fetch(&rw_bad, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

static int rw_waiting_rc;
static int64_t rw_waiting_fence;

static void *wait_to_write(void *arg)
{
    (void)arg;
    rw_waiting_rc = ops->lock_acquire(S("rw:lock"), S("w"), EPHPM_KV_LOCK_EXCLUSIVE, 60000, 600000, &rw_waiting_fence);
    return NULL;
}

static void test_rwlock_members(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, lock_info), "read/write lock members present (size %u)", ops->struct_size);
    int32_t mode = -1;
    int64_t holders = -1, f1 = 0, f2 = 0, f = -1;
    CHECK(ops->lock_info(S("rw:lock"), &mode, &holders) == EPHPM_KV_MISS && mode == EPHPM_KV_LOCK_EXCLUSIVE
          && holders == 0, "free: mode %d, %lld holders", mode, (long long)holders);
    CHECK(ops->lock_info(S("rw:lock"), NULL, &holders) == EPHPM_KV_E_INVALID, "lock_info: NULL mode");
    CHECK(ops->lock_acquire(S("rw:lock"), S("r1"), EPHPM_KV_LOCK_SHARED, 60000, 0, NULL) == EPHPM_KV_E_INVALID,
          "lock_acquire: NULL fence");
    CHECK(ops->lock_acquire(S("rw:lock"), S("r1"), 2, 60000, 0, &f) == EPHPM_KV_E_INVALID && f == 0, "mode 2");
    CHECK(last_error_says("lock mode 2"), "mode 2: last_error says why");
    CHECK(ops->lock_acquire(S("rw:lock"), "", 0, EPHPM_KV_LOCK_SHARED, 60000, 0, &f) == EPHPM_KV_E_INVALID,
          "empty token");
    CHECK(ops->lock_acquire(S("rw:lock"), S("r1"), EPHPM_KV_LOCK_SHARED, 60000, 0, &f1) == EPHPM_KV_OK && f1 > 0,
          "reader 1: fence %lld", (long long)f1);
    CHECK(ops->lock_acquire(S("rw:lock"), S("r1"), EPHPM_KV_LOCK_SHARED, 60000, 0, &f) == EPHPM_KV_E_INVALID,
          "one token reads once");
    CHECK(ops->lock_acquire(S("rw:lock"), S("r2"), EPHPM_KV_LOCK_SHARED, 60000, 0, &f2) == EPHPM_KV_OK && f2 > f1,
          "reader 2 shares: fence %lld", (long long)f2);
    CHECK(ops->lock_info(S("rw:lock"), &mode, &holders) == EPHPM_KV_OK && mode == EPHPM_KV_LOCK_SHARED
          && holders == 2, "shared: mode %d, %lld holders", mode, (long long)holders);
    f = -1;
    CHECK(ops->lock_acquire(S("rw:lock"), S("w"), EPHPM_KV_LOCK_EXCLUSIVE, 60000, 20, &f) == EPHPM_KV_EXISTS && f == 0,
          "a writer waits for the readers");
    CHECK(ops->set_nx(S("rw:lock"), S("x"), 0) == EPHPM_KV_EXISTS, "set_nx sees it held");
    CHECK(ops->lock_refresh(S("rw:lock"), S("r1"), 30000) == EPHPM_KV_OK, "a reader refreshes its hold");
    CHECK(ops->lock_refresh(S("rw:lock"), S("nobody"), 30000) == EPHPM_KV_MISS, "refresh by a stranger");
    CHECK(ops->lock_release(S("rw:lock"), S("nobody")) == EPHPM_KV_MISS, "release by a stranger");

    /* A writer waiting in lock_acquire gets the lock when the last reader
     * leaves; its claim keeps new readers out meanwhile. A reader let in
     * before the writer's thread ran and claimed leaves at once, and tries
     * again (for 120 s: a hang catch, not a speed bound). */
    pthread_t th;
    pthread_create(&th, NULL, wait_to_write, NULL);
    int r3;
    double claimed_by = now_ms() + 120000;
    while ((r3 = ops->lock_acquire(S("rw:lock"), S("r3"), EPHPM_KV_LOCK_SHARED, 60000, 0, &f)) == EPHPM_KV_OK
           && now_ms() < claimed_by) {
        ops->lock_release(S("rw:lock"), S("r3"));
        usleep(10000);
    }
    CHECK(r3 == EPHPM_KV_EXISTS, "the waiting writer's claim refuses a new reader");
    CHECK(ops->lock_release(S("rw:lock"), S("r1")) == EPHPM_KV_OK, "reader 1 leaves");
    CHECK(ops->lock_release(S("rw:lock"), S("r2")) == EPHPM_KV_OK, "reader 2 leaves");
    pthread_join(th, NULL);
    CHECK(rw_waiting_rc == EPHPM_KV_OK && rw_waiting_fence > f2, "the writer got it: rc %d, fence %lld",
          rw_waiting_rc, (long long)rw_waiting_fence);
    CHECK(ops->lock_info(S("rw:lock"), &mode, &holders) == EPHPM_KV_OK && mode == EPHPM_KV_LOCK_EXCLUSIVE
          && holders == 1, "exclusive: mode %d, %lld holders", mode, (long long)holders);
    CHECK(ops->fence(S("rw:lock"), &f) == EPHPM_KV_OK && f == rw_waiting_fence, "fence reads it: %lld", (long long)f);
    char buf[8];
    size_t len = 0;
    CHECK(ops->get(S("rw:lock"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 1 && buf[0] == 'w',
          "held exclusively: the token");
    CHECK(ops->lock_release(S("rw:lock"), S("w")) == EPHPM_KV_OK, "the writer leaves");
    CHECK(ops->lock_release(S("rw:lock"), S("w")) == EPHPM_KV_MISS, "released once");

    pthread_t ths[8];
    for (intptr_t i = 0; i < 8; i++) {
        pthread_create(&ths[i], NULL, take_rw_lock, (void *)i);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(ths[i], NULL);
    }
    CHECK(rw_bad == 0 && rw_grants == 240, "%d grants, %d overlapping, out of order or failed", rw_grants, rw_bad);
    CHECK(ops->lock_info(S("rw:hot"), &mode, &holders) == EPHPM_KV_MISS, "every hold released");
}

/* begin_request: OK on the in-process store; on a shared-memory segment
 * whose file was removed (as systemd-logind's RemoveIPC=yes removes it),
 * E_UNAVAILABLE naming the cause and the fix, and so is every call after
 * it. Leaves the in-process store served. */
/* A step request on lock and key with flags, guard and action; the rest
 * zero. */
static ephpm_kv_step step_req(uint32_t flags, int32_t guard, int32_t action, const char *token)
{
    ephpm_kv_step r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.flags = flags;
    r.guard = guard;
    r.action = action;
    r.lock = "st:lock";
    r.lock_len = 7;
    r.token = token;
    r.token_len = strlen(token);
    r.key = "st:data";
    r.key_len = 7;
    return r;
}

static void test_step_member(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, step), "step present (size %u)", ops->struct_size);
    char buf[8];
    size_t len = 0;
    const uint32_t HELD = EPHPM_KV_STEP_HELD, DONE = EPHPM_KV_STEP_DONE, FOUND = EPHPM_KV_STEP_FOUND,
                   RELEASED = EPHPM_KV_STEP_RELEASED;

    /* a takes the lock, fenced, and reads the absent data: one call. */
    ephpm_kv_step a = step_req(EPHPM_KV_STEP_ACQUIRE | EPHPM_KV_STEP_FENCED, 0, EPHPM_KV_STEP_ACTION_GET, "a");
    a.lock_ttl_ms = 60000;
    a.buf = buf;
    a.buf_cap = sizeof buf;
    a.len = 99;
    CHECK(ops->step(&a) == EPHPM_KV_OK && a.result == (HELD | DONE) && a.len == 0 && a.fence > 0,
          "a: granted, fenced, nothing read (result %u, len %zu, fence %lld)", a.result, a.len, (long long)a.fence);
    int64_t fa = a.fence;

    /* b finds it held: EXISTS, every output written. */
    ephpm_kv_step b = step_req(EPHPM_KV_STEP_ACQUIRE | EPHPM_KV_STEP_FENCED, 0, EPHPM_KV_STEP_ACTION_GET, "b");
    b.lock_ttl_ms = 60000;
    b.wait_ms = 30; /* held for an hour: no wait ends it */
    b.buf = buf;
    b.buf_cap = sizeof buf;
    b.result = 0xff;
    b.len = 99;
    b.fence = 7;
    CHECK(ops->step(&b) == EPHPM_KV_EXISTS && b.result == 0 && b.len == 0 && b.fence == 0, "b: held by a");

    /* a writes under its fence and releases: one call. */
    ephpm_kv_step w = step_req(EPHPM_KV_STEP_RELEASE, EPHPM_KV_STEP_GUARD_FENCE_HOLDER, EPHPM_KV_STEP_ACTION_SET, "a");
    w.fence = fa;
    w.value = "by a";
    w.value_len = 4;
    CHECK(ops->step(&w) == EPHPM_KV_OK && w.result == (HELD | DONE | RELEASED) && w.fence == fa,
          "a: written and released (result %u)", w.result);
    CHECK(ops->exists(S("st:lock")) == EPHPM_KV_MISS, "the lock is free");
    CHECK(ops->get(S("st:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4 && memcmp(buf, "by a", 4) == 0,
          "the data written");
    CHECK(ops->step(&w) == EPHPM_KV_OK && w.result == (HELD | DONE),
          "again: nobody was granted the lock since a's fence, so it passes; nothing to release (result %u)",
          w.result);

    /* c takes it unfenced and reads into a buffer too small: TOO_SMALL, the
     * lock c's. */
    ephpm_kv_step c = step_req(EPHPM_KV_STEP_ACQUIRE, 0, EPHPM_KV_STEP_ACTION_GET, "c");
    c.lock_ttl_ms = 60000;
    c.buf = buf;
    c.buf_cap = 2;
    CHECK(ops->step(&c) == EPHPM_KV_TOO_SMALL && c.len == 4 && (c.result & (HELD | FOUND)) == (HELD | FOUND)
          && c.fence == 0, "c: granted, the value does not fit (len %zu, result %u)", c.len, c.result);
    CHECK(ops->fence(S("st:lock"), &c.fence) == EPHPM_KV_OK && c.fence == fa, "c's grant minted no fence");

    /* a's fence no longer passes the holder guard: c holds the lock. */
    CHECK(ops->step(&w) == EPHPM_KV_MISS && w.result == 0, "a's stale write refused");

    /* c refreshes the data's TTL under its token and releases. */
    ephpm_kv_step e = step_req(EPHPM_KV_STEP_RELEASE, EPHPM_KV_STEP_GUARD_TOKEN, EPHPM_KV_STEP_ACTION_EXPIRE, "x");
    e.ttl_ms = 120000;
    CHECK(ops->step(&e) == EPHPM_KV_MISS && e.result == 0, "a wrong token: nothing");
    e.token = "c";
    e.token_len = 1;
    int64_t ttl = 0;
    CHECK(ops->step(&e) == EPHPM_KV_OK && e.result == (HELD | DONE | RELEASED), "c: refreshed and released");
    CHECK(ops->pttl(S("st:data"), &ttl) == EPHPM_KV_OK && ttl > 60000, "the new TTL: %lld ms", (long long)ttl);
    CHECK(ops->exists(S("st:lock")) == EPHPM_KV_MISS, "released");

    /* Refused, and nothing changed. */
    ephpm_kv_step bad = step_req(EPHPM_KV_STEP_ACQUIRE, EPHPM_KV_STEP_GUARD_TOKEN, EPHPM_KV_STEP_ACTION_DEL, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "a guard with an acquire");
    bad = step_req(EPHPM_KV_STEP_FENCED, EPHPM_KV_STEP_GUARD_TOKEN, EPHPM_KV_STEP_ACTION_DEL, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "FENCED without an acquire");
    bad = step_req(64, 0, EPHPM_KV_STEP_ACTION_DEL, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "an unknown flag");
    bad = step_req(0, 0, 9, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "an unknown action");
    bad = step_req(0, 7, EPHPM_KV_STEP_ACTION_DEL, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "an unknown guard");
    bad = step_req(EPHPM_KV_STEP_RELEASE, EPHPM_KV_STEP_GUARD_FENCE, EPHPM_KV_STEP_ACTION_DEL, "z");
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "a fence guard with fence 0");
    bad = step_req(0, 0, EPHPM_KV_STEP_ACTION_DEL, "z");
    bad.key = NULL;
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "a NULL key with a length");
    bad = step_req(0, 0, EPHPM_KV_STEP_ACTION_DEL, "z");
    bad.wait_ms = 10;
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID, "wait_ms without an acquire");
    bad = step_req(0, 0, EPHPM_KV_STEP_ACTION_DEL, "z");
    bad.struct_size = 8;
    CHECK(ops->step(&bad) == EPHPM_KV_E_INVALID && last_error_says("struct_size"), "a struct_size too small");
    CHECK(ops->step(NULL) == EPHPM_KV_E_INVALID, "NULL");
    /* A field the step does not use is not read: a NULL key with a length,
     * left over in a reused struct, under a step that only takes the lock. */
    ephpm_kv_step only = step_req(EPHPM_KV_STEP_ACQUIRE | EPHPM_KV_STEP_FENCED, 0, EPHPM_KV_STEP_ACTION_NONE, "o");
    only.lock_ttl_ms = 60000;
    only.key = NULL;
    CHECK(ops->step(&only) == EPHPM_KV_OK && only.result == HELD && only.fence > 0,
          "the unused key is ignored (result %u)", only.result);
    CHECK(ops->del_if_eq(S("st:lock"), S("o")) == EPHPM_KV_OK, "released");
    CHECK(ops->get(S("st:data"), buf, sizeof buf, &len) == EPHPM_KV_OK && len == 4, "the data is still there");

    /* A step with no lock at all: an action alone. */
    ephpm_kv_step d = step_req(0, 0, EPHPM_KV_STEP_ACTION_DEL, "");
    d.lock = NULL;
    d.lock_len = 0;
    CHECK(ops->step(&d) == EPHPM_KV_OK && d.result == (HELD | DONE), "del alone (result %u)", d.result);
    CHECK(ops->exists(S("st:data")) == EPHPM_KV_MISS, "removed");
}

static void test_begin_request_member(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, begin_request), "begin_request present (size %u)", ops->struct_size);
    CHECK(ops->begin_request() == EPHPM_KV_OK, "the in-process store stays");

    char name[64], backend[80], path[128], msg[512];
    snprintf(name, sizeof name, "ctest-removed-%ld", (long)getpid());
    snprintf(backend, sizeof backend, "shm://%s", name);
    snprintf(path, sizeof path, "/dev/shm/ephpm-%s.%ld", name, (long)geteuid());
    CHECK(ops->configure(S("backend"), backend, strlen(backend)) == EPHPM_KV_OK, "segment opened");
    CHECK(ops->set(S("r:k"), S("v"), 0) == EPHPM_KV_OK, "set on the segment");
    CHECK(ops->begin_request() == EPHPM_KV_OK, "its file is in place");
    CHECK(unlink(path) == 0, "remove %s", path);
    CHECK(ops->begin_request() == EPHPM_KV_E_UNAVAILABLE, "the file is gone");
    size_t len = 0;
    CHECK(ops->last_error(msg, sizeof msg - 1, &len) == EPHPM_KV_OK, "last_error");
    msg[len] = '\0';
    CHECK(strstr(msg, path) != NULL && strstr(msg, "RemoveIPC=no") != NULL, "names the file and the fix: %s", msg);
    CHECK(ops->set_nx(S("r:lock"), S("t"), 1000) == EPHPM_KV_E_UNAVAILABLE, "set_nx refused");
    CHECK(ops->get(S("r:k"), msg, sizeof msg, &len) == EPHPM_KV_E_UNAVAILABLE, "get refused");
    CHECK(ops->configure(S("backend"), S("memory")) == EPHPM_KV_OK, "back to the in-process store");
    CHECK(ops->begin_request() == EPHPM_KV_OK, "the in-process store serves");
}

/* One scan record's fields. */
struct scan_rec {
    uint32_t key_len, kind;
    int64_t size, ttl_ms, holders, waiters, pid;
    const char *key;
};

/* Reads the record at p; returns the next. */
static const char *scan_read(const char *p, struct scan_rec *r)
{
    memcpy(&r->key_len, p, 4);
    memcpy(&r->kind, p + 4, 4);
    memcpy(&r->size, p + 8, 8);
    memcpy(&r->ttl_ms, p + 16, 8);
    memcpy(&r->holders, p + 24, 8);
    memcpy(&r->waiters, p + 32, 8);
    memcpy(&r->pid, p + 40, 8);
    r->key = p + EPHPM_KV_SCAN_RECORD_HEAD;
    return r->key + r->key_len;
}

/* scan: the walk of a prefix's keys, page by page. */
static void test_scan_member(void)
{
    CHECK(EPHPM_KV_OPS_HAS(ops, scan), "scan present (size %u)", ops->struct_size);
    char key[32];
    for (int i = 0; i < 25; i++) {
        int n = snprintf(key, sizeof key, "scan:k%02d", i);
        CHECK(ops->set(key, (size_t)n, "0123456789", (size_t)(i % 10), i % 2 ? 60000 : 0) == EPHPM_KV_OK, "set %s", key);
    }
    CHECK(ops->set(S("scanother"), S("x"), 0) == EPHPM_KV_OK, "a key outside the prefix");
    int64_t fence = 0;
    CHECK(ops->lock_acquire(S("scan:lock"), S("r1"), EPHPM_KV_LOCK_SHARED, 60000, 0, &fence) == EPHPM_KV_OK, "read hold");
    CHECK(ops->set_nx(S("scan:x"), S("tok"), 30000) == EPHPM_KV_OK, "a set_nx lock");

    static char buf[1 << 16];
    int seen[25] = {0}, records = 0, pages = 0, bad = 0;
    uint64_t cursor = 0, next = 1;
    size_t len = 0;
    do {
        int rc = ops->scan(S("scan:k"), cursor, 4, 0, buf, sizeof buf, &len, &next);
        CHECK(rc == EPHPM_KV_OK, "page %d: rc %d", pages, rc);
        if (rc != EPHPM_KV_OK) {
            break;
        }
        for (const char *p = buf; p < buf + len;) {
            struct scan_rec r;
            p = scan_read(p, &r);
            int i = -1;
            if (r.key_len == 8 && memcmp(r.key, "scan:k", 6) == 0) {
                i = (r.key[6] - '0') * 10 + (r.key[7] - '0');
            }
            if (i < 0 || i >= 25 || r.kind != EPHPM_KV_SCAN_VALUE || r.size != i % 10
                || (i % 2 ? r.ttl_ms <= 0 || r.ttl_ms > 60000 : r.ttl_ms != -1) || r.holders != 0) {
                bad++;
                continue;
            }
            seen[i]++;
            records++;
        }
        cursor = next;
        pages++;
    } while (cursor != 0 && pages < 1000);
    int once = 0;
    for (int i = 0; i < 25; i++) {
        once += seen[i] == 1;
    }
    CHECK(once == 25 && bad == 0 && records == 25, "every key once: %d once, %d records, %d bad, %d pages",
          once, records, bad, pages);

    /* The walk of locks: the read hold and the set_nx lock, no value. */
    int shared = 0, exclusive = 0, values = 0;
    cursor = 0;
    do {
        CHECK(ops->scan(S("scan:"), cursor, 100, EPHPM_KV_SCAN_LOCKS, buf, sizeof buf, &len, &next) == EPHPM_KV_OK,
              "locks");
        for (const char *p = buf; p < buf + len;) {
            struct scan_rec r;
            p = scan_read(p, &r);
            if (r.kind == EPHPM_KV_SCAN_LOCK_SHARED && r.holders == 1 && r.key_len == 9) {
                shared++;
            } else if (r.kind == EPHPM_KV_SCAN_LOCK && r.holders == 1 && r.ttl_ms > 0 && r.size == 3) {
                exclusive++;
            } else {
                values++;
            }
        }
        cursor = next;
    } while (cursor != 0);
    CHECK(shared == 1 && exclusive == 1 && values == 0, "locks: %d shared, %d exclusive, %d others",
          shared, exclusive, values);

    /* A buffer too small for the page: its length, nothing else. */
    next = 7;
    CHECK(ops->scan(S("scan:x"), 0, 100, 0, buf, 10, &len, &next) == EPHPM_KV_TOO_SMALL
          && len == EPHPM_KV_SCAN_RECORD_HEAD + 6 && next == 0, "too small: %zu", len);
    CHECK(ops->scan(S("scan:x"), 0, 100, 0, NULL, 0, &len, &next) == EPHPM_KV_TOO_SMALL, "no buffer");
    CHECK(ops->scan(S("scan:none"), 0, 100, 0, NULL, 0, &len, &next) == EPHPM_KV_OK && len == 0,
          "no key: an empty page in no buffer");

    /* Arguments. */
    CHECK(ops->scan(S("scan:"), 0, 0, 0, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID, "count 0");
    CHECK(last_error_says("count 0"), "count 0: last_error says why");
    CHECK(ops->scan(S("scan:"), 0, EPHPM_KV_SCAN_MAX_COUNT + 1, 0, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID,
          "count too large");
    CHECK(ops->scan(S("scan:"), 0, 10, 2, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID, "unknown flag");
    CHECK(ops->scan(S("scan:"), UINT64_MAX, 10, 0, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID, "bad cursor");
    CHECK(ops->scan(S("scan:"), 0, 10, 0, buf, sizeof buf, NULL, &next) == EPHPM_KV_E_INVALID, "NULL len");
    CHECK(ops->scan(S("scan:"), 0, 10, 0, buf, sizeof buf, &len, NULL) == EPHPM_KV_E_INVALID, "NULL next");
    CHECK(ops->scan(NULL, 3, 0, 10, 0, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID, "NULL prefix");
    static char long_prefix[EPHPM_KV_MAX_KEY_LEN + 1];
    memset(long_prefix, 'p', sizeof long_prefix);
    CHECK(ops->scan(long_prefix, sizeof long_prefix, 0, 10, 0, buf, sizeof buf, &len, &next) == EPHPM_KV_E_INVALID,
          "a prefix longer than a key");
    CHECK(ops->lock_release(S("scan:lock"), S("r1")) == EPHPM_KV_OK, "release");

    /* The status page's stats: the in-process store keeps rates, has no
     * shards to show; an older caller's struct ends before them. */
    ephpm_kv_stats st;
    memset(&st, 0xAB, sizeof st);
    st.struct_size = sizeof st;
    CHECK(ops->stats(&st) == EPHPM_KV_OK && st.rate_interval_ms == 10000 && st.rate_count <= EPHPM_KV_STATS_RATES
          && st.shard_count == 0 && st.facts[0] == '\0', "stats: rates every %u ms, %u shards", st.rate_interval_ms,
          st.shard_count);
    memset(&st, 0xAB, sizeof st);
    st.struct_size = offsetof(ephpm_kv_stats, facts);
    CHECK(ops->stats(&st) == EPHPM_KV_OK && (unsigned char)st.facts[0] == 0xAB, "an older struct is not overrun");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s /path/to/libephpm.so\n", argv[0]);
        return 2;
    }
    load(argv[1]);
    test_members();
    test_set_nx_race();
    test_forked_child();
    test_session_members();
    test_session_round_trip_members();
    test_fenced_session_members();
    test_lazy_write_member();
    test_session_requests();
    test_key_api_members();
    test_batch_members();
    test_fence_members();
    test_rwlock_members();
    test_scan_member();
    test_step_member();
    test_begin_request_member();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
