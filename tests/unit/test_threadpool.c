/* test_threadpool.c - suite "threadpool": TFPSimpleThreadPool as the pooled
 * handler uses it.  Synchronisation through mutex/condition variables and
 * counters only; a "the adder is still looping" claim is a count of
 * DoAddTask's attempts, never a sleep. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "os.h"
#include "threadpool.h"
#include "unit.h"

#define NTASKS 200

static atomic_int runs[NTASKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done, started, gate_open;

static void count_task(void *arg)
{
    atomic_fetch_add(&runs[*(int *)arg], 1);
    pthread_mutex_lock(&lock);
    done++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static int ids[NTASKS];

static void reset(void)
{
    int i;

    for (i = 0; i < NTASKS; i++) {
        atomic_store(&runs[i], 0);
        ids[i] = i;
    }
    pthread_mutex_lock(&lock);
    done = started = gate_open = 0;
    pthread_mutex_unlock(&lock);
}

/* Holds its thread until the gate opens. */
static void gate_task(void *arg)
{
    pthread_mutex_lock(&lock);
    started++;
    pthread_cond_broadcast(&cond);
    while (!gate_open)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    atomic_fetch_add(&runs[*(int *)arg], 1);
}

static void wait_started(int n)
{
    pthread_mutex_lock(&lock);
    while (started < n)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void open_gate(void)
{
    pthread_mutex_lock(&lock);
    gate_open = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void test_runs_each_task_once(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    int i, ones = 0;

    reset();
    p = threadpool_new(4, 3, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (i = 0; i < NTASKS; i++)
        ASSERT_INT(threadpool_add_task(p, count_task, &ids[i]), 0);
    pthread_mutex_lock(&lock);
    while (done < NTASKS)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    for (i = 0; i < NTASKS; i++)
        ones += atomic_load(&runs[i]) == 1;
    ASSERT_INT(ones, NTASKS);
    /* Every task went to a thread: the wait queue was never used. */
    ASSERT_INT(threadpool_cancel_queued_tasks(p, NULL), 0);
    CU_ASSERT(threadpool_thread_count(p) <= 4);
    threadpool_free(p);
}

/* Threads start on the first AddTask: MinThreads at once, more on demand,
 * never more than MaxThreads. */
static void test_min_and_max_threads(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;

    reset();
    p = threadpool_new(3, 2, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ASSERT_INT(threadpool_thread_count(p), 0);
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[0]), 0);
    wait_started(1);
    ASSERT_INT(threadpool_thread_count(p), 2);
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[1]), 0);
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[2]), 0);
    wait_started(3);
    ASSERT_INT(threadpool_thread_count(p), 3);
    ASSERT_INT(threadpool_busy_thread_count(p), 3);
    open_gate();
    threadpool_free(p);
    ASSERT_INT(atomic_load(&runs[0]) + atomic_load(&runs[1]) +
               atomic_load(&runs[2]), 3);
}

struct adder {
    struct threadpool *p;
    int id;
    atomic_int returned;
    int rc;
};

static void *adder_main(void *arg)
{
    struct adder *a = arg;

    a->rc = threadpool_add_task(a->p, count_task, &ids[a->id]);
    atomic_store(&a->returned, 1);
    return NULL;
}

/* DoAddTask with QueueTasks on (upstream's default): no thread free means
 * the loop goes round and round, and AddTask returns only when a thread
 * frees up.  Proven by the attempt count growing while the adder has not
 * returned, then the task running once the gate opens. */
static void test_add_task_loops_until_a_thread_is_free(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    struct adder a = { NULL, 7, 0, -2 };
    pthread_t t;
    unsigned long before;

    reset();
    p = threadpool_new(1, 0, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    threadpool_set_add_timeout(p, 30); /* ignored while QueueTasks is on */
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[0]), 0);
    wait_started(1);
    a.p = p;
    before = threadpool_add_attempts(p);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, adder_main, &a) == 0);
    while (threadpool_add_attempts(p) < before + 10000 &&
           !atomic_load(&a.returned))
        sched_yield();
    ASSERT_INT(atomic_load(&a.returned), 0);
    CU_ASSERT(threadpool_add_attempts(p) >= before + 10000);
    open_gate();
    pthread_join(t, NULL);
    ASSERT_INT(a.rc, 0);
    pthread_mutex_lock(&lock);
    while (done < 1)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    ASSERT_INT(atomic_load(&runs[7]), 1);
    ASSERT_INT(threadpool_cancel_queued_tasks(p, NULL), 0);
    threadpool_free(p);
}

/* QueueTasks off with AddTimeout > 0: DoAddTask waits for a thread to
 * finish a task, gives up after AddTimeout, and AddTask fails (the task is
 * not queued). */
static void test_add_timeout_without_queue(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;

    reset();
    p = threadpool_new(1, 0, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    threadpool_set_queue_tasks(p, 0);
    threadpool_set_add_timeout(p, 5);
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[0]), 0);
    wait_started(1);
    ASSERT_INT(threadpool_add_task(p, count_task, &ids[1]), -1);
    ASSERT_INT(threadpool_cancel_queued_tasks(p, NULL), 0);
    open_gate();
    threadpool_free(p);
    ASSERT_INT(atomic_load(&runs[1]), 0);
    ASSERT_INT(atomic_load(&runs[0]), 1);
}

/* Destroy lets a running task finish, then joins. */
static void test_free_waits_for_running_task(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    pthread_t t;
    struct adder a = { NULL, 3, 0, -2 };

    reset();
    p = threadpool_new(2, 1, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ASSERT_INT(threadpool_add_task(p, gate_task, &ids[0]), 0);
    wait_started(1);
    a.p = p;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, adder_main, &a) == 0);
    pthread_join(t, NULL);
    ASSERT_INT(a.rc, 0);
    open_gate();
    threadpool_free(p);
    ASSERT_INT(atomic_load(&runs[0]), 1);
    ASSERT_INT(atomic_load(&runs[3]), 1);
}

static void test_new_rejects_bad_counts(void)
{
    char err[OS_ERR_LEN] = "";

    CU_ASSERT_PTR_NULL(threadpool_new(0, 0, err));
    CU_ASSERT(strstr(err, "MaxThreads") != NULL);
    CU_ASSERT_PTR_NULL(threadpool_new(2, 3, err));
    threadpool_free(NULL);
}

static const struct unit_test threadpool_tests[] = {
    { "runs_each_task_once", test_runs_each_task_once },
    { "min_and_max_threads", test_min_and_max_threads },
    { "b7_add_task_loops_until_a_thread_is_free", test_add_task_loops_until_a_thread_is_free },
    { "add_timeout_without_queue", test_add_timeout_without_queue },
    { "free_waits_for_running_task", test_free_waits_for_running_task },
    { "new_rejects_bad_counts", test_new_rejects_bad_counts },
};

int unit_register_threadpool(void)
{
    return UNIT_ADD_SUITE("threadpool", NULL, threadpool_tests);
}
