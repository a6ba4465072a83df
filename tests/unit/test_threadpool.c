/* test_threadpool.c - suite "threadpool": TFPSimpleThreadPool as the pooled
 * handler uses it.  Synchronisation through mutex/condition variables only. */
#include <pthread.h>
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

static void test_runs_each_task_once(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    int i, ones = 0;

    reset();
    p = threadpool_new(4, err);
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
    ASSERT_INT(threadpool_cancel_queued_tasks(p, NULL), 0);
    threadpool_free(p);
    ASSERT_INT(done, NTASKS);
}

static void test_free_drains_queue(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    int i, ones = 0;

    reset();
    p = threadpool_new(2, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (i = 0; i < 50; i++)
        ASSERT_INT(threadpool_add_task(p, count_task, &ids[i]), 0);
    /* Free finishes running tasks and the queued ones, then joins. */
    threadpool_free(p);
    for (i = 0; i < 50; i++)
        ones += atomic_load(&runs[i]) == 1;
    ASSERT_INT(ones, 50);
    ASSERT_INT(done, 50);
}

/* The first task holds the only worker until the gate opens. */
static void gate_task(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    started = 1;
    pthread_cond_broadcast(&cond);
    while (!gate_open)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    atomic_fetch_add(&runs[0], 1);
}

static int cancelled[8];
static int ncancelled;

static void on_cancel(void *arg)
{
    cancelled[ncancelled++] = *(int *)arg;
}

static void test_cancel_queued_tasks(void)
{
    char err[OS_ERR_LEN];
    struct threadpool *p;
    int i;

    reset();
    ncancelled = 0;
    p = threadpool_new(1, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ASSERT_INT(threadpool_add_task(p, gate_task, NULL), 0);
    pthread_mutex_lock(&lock);
    while (!started)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    /* The worker is inside gate_task: these five stay queued. */
    for (i = 1; i <= 5; i++)
        ASSERT_INT(threadpool_add_task(p, count_task, &ids[i]), 0);
    ASSERT_INT(threadpool_cancel_queued_tasks(p, on_cancel), 5);
    ASSERT_INT(ncancelled, 5);
    for (i = 0; i < 5 && i < ncancelled; i++)
        ASSERT_INT(cancelled[i], i + 1); /* in queue order */
    ASSERT_INT(threadpool_cancel_queued_tasks(p, on_cancel), 0);
    pthread_mutex_lock(&lock);
    gate_open = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    threadpool_free(p);
    ASSERT_INT(atomic_load(&runs[0]), 1);
    for (i = 1; i <= 5; i++)
        ASSERT_INT(atomic_load(&runs[i]), 0);
    ASSERT_INT(done, 0);
}

static void test_new_without_threads(void)
{
    char err[OS_ERR_LEN] = "";

    CU_ASSERT_PTR_NULL(threadpool_new(0, err));
    threadpool_free(NULL);
}

int unit_register_threadpool(void)
{
    CU_pSuite s = CU_add_suite("threadpool", NULL, NULL);

    if (!s ||
        !CU_add_test(s, "runs_each_task_once", test_runs_each_task_once) ||
        !CU_add_test(s, "free_drains_queue", test_free_drains_queue) ||
        !CU_add_test(s, "cancel_queued_tasks", test_cancel_queued_tasks) ||
        !CU_add_test(s, "new_without_threads", test_new_without_threads))
        return -1;
    return 0;
}
