/* test_pools.c - CUnit tests of the two executors.
 *
 * Bounded pool (the PR #553 executor): a full queue answers SUBMIT_FULL and
 * the task never runs; a drain refuses new work and runs every accepted
 * task before it returns.  Global pool (the TThreadPool.Default model): the
 * first item fills the pool to its minimum, growth stops at the maximum.
 *
 * Synchronisation is by a gate (mutex + condition variable) the tasks wait
 * on and a counter they bump: no sleeps.  The runner prints one kit-format
 * TEST line per test, named `dispatch <label> <test>` (label = argv[1],
 * default "unit"). */
#include <CUnit/TestRun.h>
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "bpool.h"
#include "gpool.h"
#include "os.h"

/* ---- a gate the tasks block on ---------------------------------------- */

struct gate {
    os_mutex *mu;
    os_cond *cv;
    int open;
    int started;    /* tasks that reached the gate */
    int finished;   /* tasks that went through it */
};

static void gate_task(void *arg)
{
    struct gate *g = arg;

    os_mutex_lock(g->mu);
    g->started++;
    os_cond_broadcast(g->cv);
    while (!g->open)
        os_cond_wait(g->cv, g->mu);
    g->finished++;
    os_cond_broadcast(g->cv);
    os_mutex_unlock(g->mu);
}

/* Set g up, closed; returns the task that waits on it. */
static struct dispatch_task gate_init(struct gate *g)
{
    memset(g, 0, sizeof *g);
    g->mu = os_mutex_new();
    g->cv = os_cond_new();
    return (struct dispatch_task){ gate_task, g };
}

static void gate_destroy(struct gate *g)
{
    os_cond_free(g->cv);
    os_mutex_free(g->mu);
}

static void gate_wait_started(struct gate *g, int n)
{
    os_mutex_lock(g->mu);
    while (g->started < n)
        os_cond_wait(g->cv, g->mu);
    os_mutex_unlock(g->mu);
}

static void gate_open(struct gate *g)
{
    os_mutex_lock(g->mu);
    g->open = 1;
    os_cond_broadcast(g->cv);
    os_mutex_unlock(g->mu);
}

static int gate_finished(struct gate *g)
{
    int n;

    os_mutex_lock(g->mu);
    n = g->finished;
    os_mutex_unlock(g->mu);
    return n;
}

/* ---- bounded pool ------------------------------------------------------ */

static void test_bpool_queue_full(void)
{
    char err[OS_ERR_LEN];
    struct gate g;
    struct bpool *p;
    struct bpool_stats s;
    struct dispatch_task t;

    t = gate_init(&g);
    p = bpool_new(err, 1, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_OK);
    gate_wait_started(&g, 1);                 /* the worker holds task 1 */
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_OK);    /* slot 1 */
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_OK);    /* slot 2 */
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_FULL);  /* no slot left */
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_FULL);
    bpool_get_stats(p, &s);
    CU_ASSERT_EQUAL(s.accepted, 3);
    CU_ASSERT_EQUAL(s.rejected, 2);
    CU_ASSERT_EQUAL(s.queued, 2);
    CU_ASSERT_EQUAL(s.running, 1);
    gate_open(&g);
    bpool_drain(p);
    CU_ASSERT_EQUAL(gate_finished(&g), 3);    /* the refused ones never ran */
    bpool_get_stats(p, &s);
    CU_ASSERT_EQUAL(s.completed, 3);
    bpool_free(p);
    gate_destroy(&g);
}

struct drain_arg {
    struct bpool *p;
};

static void *drain_thread(void *arg)
{
    bpool_drain(((struct drain_arg *)arg)->p);
    return NULL;
}

static void test_bpool_drain_runs_accepted_work(void)
{
    char err[OS_ERR_LEN];
    struct gate g;
    struct bpool *p;
    struct dispatch_task t;
    struct drain_arg da;
    struct bpool_stats s;
    os_thread *th;
    int i;

    t = gate_init(&g);
    p = bpool_new(err, 1, 8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_OK);
    gate_wait_started(&g, 1);
    da.p = p;
    th = os_thread_start(err, drain_thread, &da);
    CU_ASSERT_PTR_NOT_NULL_FATAL(th);
    /* Poll (readiness, not timing) until the drain has closed the pool. */
    do
        bpool_get_stats(p, &s);
    while (!s.closing);
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_CLOSED);
    CU_ASSERT_EQUAL(gate_finished(&g), 0);    /* nothing ran past the gate yet */
    gate_open(&g);
    os_thread_join(th);                       /* returns after the 6th task */
    CU_ASSERT_EQUAL(gate_finished(&g), 6);
    CU_ASSERT_EQUAL(bpool_submit(p, t), SUBMIT_CLOSED);
    bpool_drain(p);                           /* idempotent */
    bpool_free(p);
    gate_destroy(&g);
}

static void test_bpool_bad_sizes(void)
{
    char err[OS_ERR_LEN] = "";

    CU_ASSERT_PTR_NULL(bpool_new(err, 0, 4));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "must be at least 1"));
    CU_ASSERT_PTR_NULL(bpool_new(err, 2, 0));
}

/* ---- global pool ------------------------------------------------------- */

static void test_gpool_first_item_fills_minimum(void)
{
    char err[OS_ERR_LEN];
    struct gate g;
    struct gpool *p;
    struct gpool_stats s;
    struct dispatch_task t;

    t = gate_init(&g);
    p = gpool_new(err, 4, 64, 60000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gpool_get_stats(p, &s);
    CU_ASSERT_EQUAL(s.threads, 0);            /* lazy, as TThreadPool */
    CU_ASSERT_EQUAL(gpool_submit(p, t), SUBMIT_OK);
    gpool_get_stats(p, &s);
    CU_ASSERT_EQUAL(s.threads, 4);
    gate_open(&g);
    gpool_drain(p);
    CU_ASSERT_EQUAL(gate_finished(&g), 1);
    gpool_free(p);
    gate_destroy(&g);
}

static void test_gpool_grows_to_maximum_only(void)
{
    char err[OS_ERR_LEN];
    struct gate g;
    struct gpool *p;
    struct gpool_stats s;
    struct dispatch_task t;
    int i;

    t = gate_init(&g);
    p = gpool_new(err, 1, 3, 60000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(gpool_submit(p, t), SUBMIT_OK);   /* unbounded queue */
    gate_wait_started(&g, 3);                 /* every worker is blocked */
    gpool_get_stats(p, &s);
    CU_ASSERT_EQUAL(s.threads, 3);
    CU_ASSERT_EQUAL(s.peak, 3);
    CU_ASSERT_EQUAL(s.queued, 3);
    gate_open(&g);
    gpool_drain(p);                           /* runs the queued three too */
    CU_ASSERT_EQUAL(gate_finished(&g), 6);
    CU_ASSERT_EQUAL(gpool_submit(p, t), SUBMIT_CLOSED);
    gpool_free(p);
    gate_destroy(&g);
}

/* ---- runner ------------------------------------------------------------ */

void test_options_forms(void);   /* test_options.c */
void test_options_errors(void);

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "bpool_queue_full", test_bpool_queue_full },
        { "bpool_drain_runs_accepted_work", test_bpool_drain_runs_accepted_work },
        { "bpool_bad_sizes", test_bpool_bad_sizes },
        { "gpool_first_item_fills_minimum", test_gpool_first_item_fills_minimum },
        { "gpool_grows_to_maximum_only", test_gpool_grows_to_maximum_only },
        { "options_forms", test_options_forms },
        { "options_errors", test_options_errors },
    };
    const char *label = argc > 1 ? argv[1] : "unit";
    unsigned failed_total = 0;
    size_t i;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    for (i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        CU_pSuite s = CU_add_suite(tests[i].name, NULL, NULL);

        if (!s || !CU_add_test(s, tests[i].name, tests[i].fn)) {
            CU_cleanup_registry();
            return 1;
        }
    }
    for (i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        CU_pSuite s = CU_get_suite(tests[i].name);

        CU_run_suite(s);   /* silent; the failure count is this run's */
        if (CU_get_number_of_failures() > 0) {
            printf("TEST: dispatch %s %s [FAIL] %u assertion(s)\n",
                   label, tests[i].name, CU_get_number_of_failures());
            failed_total++;
        } else {
            printf("TEST: dispatch %s %s [ OK ]\n", label, tests[i].name);
        }
    }
    CU_cleanup_registry();
    return failed_total ? 1 : 0;
}
