/* threadpool.c - see threadpool.h.  One function per routine of
 * TFPCustomSimpleThreadPool and its TTaskThread / TThreadPoolList. */
#include "threadpool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "os.h"

/* DefaultTerminateWait, ms. */
#define THREADPOOL_TERMINATE_WAIT_MS 50

struct threadpool_task {
    threadpool_task_fn fn;
    void *arg;
    struct threadpool_task *next; /* in the wait queue */
};

/* TTaskThread: one task slot and the event that says it was filled. */
struct threadpool_worker {
    struct threadpool *pool;
    os_thread *thread;
    os_mutex *lock;
    os_cond *event;                        /* FTaskEvent */
    int signalled, terminated;             /* guarded by lock */
    _Atomic(struct threadpool_task *) task; /* FTask: NULL = available */
};

struct threadpool {
    atomic_int max_threads;
    int min_threads;
    atomic_int queue_tasks;   /* FQueueTasks */
    atomic_int add_timeout;   /* FAddTimeout, ms */
    os_mutex *task_queue_lock; /* FTaskQueueLock */
    /* TThreadPoolList.FList. */
    os_mutex *list_lock;
    struct threadpool_worker **workers;
    int nworkers, cap_threads;
    /* FWaitQueue, FWaitQueueLock. */
    os_mutex *wait_lock;
    struct threadpool_task *wait_head;
    /* FThreadDoneEvent: an auto-reset event. */
    os_mutex *done_lock;
    os_cond *done_cond;
    int done_signalled;
    atomic_ulong add_attempts;
};

/* ---- TTaskThread ------------------------------------------------------ */

/* TThreadPoolList.TaskDone: FThreadDoneEvent.SetEvent. */
static void threadpool_task_done(struct threadpool *p)
{
    os_mutex_lock(p->done_lock);
    p->done_signalled = 1;
    os_cond_signal(p->done_cond);
    os_mutex_unlock(p->done_lock);
}

/* TTaskThread.Execute: wait for the event; run the task in the slot, free
 * it (FreeTask empties the slot: the thread is available again), TaskDone. */
static void *threadpool_task_thread_execute(void *arg)
{
    struct threadpool_worker *w = arg;
    int terminated;

    os_block_stop_signals();
    do {
        struct threadpool_task *t;

        os_mutex_lock(w->lock);
        while (!w->signalled && !w->terminated)
            os_cond_wait(w->event, w->lock);
        w->signalled = 0;
        terminated = w->terminated;
        os_mutex_unlock(w->lock);
        /* A task handed over before Terminate still runs: it owns memory
         * (a connection) that nothing else would release. */
        t = atomic_load(&w->task);
        if (t) {
            t->fn(t->arg);
            free(t);
            atomic_store(&w->task, NULL);
            threadpool_task_done(w->pool);
        }
    } while (!terminated);
    return NULL;
}

/* TTaskThread.DoSetTask: fill the slot (only when empty), set the event. */
static int threadpool_set_task(struct threadpool_worker *w,
                               struct threadpool_task *t)
{
    struct threadpool_task *none = NULL;

    if (!atomic_compare_exchange_strong(&w->task, &none, t))
        return 0;
    os_mutex_lock(w->lock);
    w->signalled = 1;
    os_cond_signal(w->event);
    os_mutex_unlock(w->lock);
    return 1;
}

static void threadpool_worker_free(struct threadpool_worker *w)
{
    if (!w)
        return;
    os_cond_free(w->event);
    os_mutex_free(w->lock);
    free(w);
}

/* ---- TThreadPoolList -------------------------------------------------- */

/* AddThread: a new thread with an empty slot.  NULL when it cannot start. */
static struct threadpool_worker *threadpool_add_thread(struct threadpool *p)
{
    char err[OS_ERR_LEN];
    struct threadpool_worker *w = calloc(1, sizeof *w);

    if (!w || !(w->lock = os_mutex_new()) || !(w->event = os_cond_new())) {
        threadpool_worker_free(w);
        return NULL;
    }
    w->pool = p;
    os_mutex_lock(p->list_lock);
    if (p->nworkers < atomic_load(&p->max_threads))
        w->thread = os_thread_start(err, threadpool_task_thread_execute, w);
    if (w->thread)
        p->workers[p->nworkers++] = w;
    os_mutex_unlock(p->list_lock);
    if (!w->thread) {
        threadpool_worker_free(w);
        return NULL;
    }
    return w;
}

/* GetAvailableThread: the last thread whose slot is empty, as upstream's
 * loop that keeps overwriting its result. */
static struct threadpool_worker *threadpool_get_available_thread(
    struct threadpool *p)
{
    struct threadpool_worker *found = NULL;
    int i;

    os_mutex_lock(p->list_lock);
    for (i = 0; i < p->nworkers; i++)
        if (!atomic_load(&p->workers[i]->task))
            found = p->workers[i];
    os_mutex_unlock(p->list_lock);
    return found;
}

int threadpool_max_threads(struct threadpool *p)
{
    return atomic_load(&p->max_threads);
}

int threadpool_thread_count(struct threadpool *p)
{
    int n;

    os_mutex_lock(p->list_lock);
    n = p->nworkers;
    os_mutex_unlock(p->list_lock);
    return n;
}

int threadpool_busy_thread_count(struct threadpool *p)
{
    int i, n = 0;

    os_mutex_lock(p->list_lock);
    for (i = 0; i < p->nworkers; i++)
        n += atomic_load(&p->workers[i]->task) != NULL;
    os_mutex_unlock(p->list_lock);
    return n;
}

/* ---- TFPCustomSimpleThreadPool ---------------------------------------- */

struct threadpool *threadpool_new(int max_threads, int min_threads, char *err)
{
    struct threadpool *p;

    if (max_threads < 1 || min_threads < 0 || min_threads > max_threads) {
        if (err)
            snprintf(err, OS_ERR_LEN, "thread pool: MinThreads %d, MaxThreads %d",
                     min_threads, max_threads);
        return NULL;
    }
    p = calloc(1, sizeof *p);
    if (!p || !(p->task_queue_lock = os_mutex_new()) ||
        !(p->list_lock = os_mutex_new()) || !(p->wait_lock = os_mutex_new()) ||
        !(p->done_lock = os_mutex_new()) || !(p->done_cond = os_cond_new()) ||
        !(p->workers = calloc((size_t)max_threads, sizeof *p->workers))) {
        threadpool_free(p);
        if (err)
            snprintf(err, OS_ERR_LEN, "thread pool: out of memory");
        return NULL;
    }
    atomic_store(&p->max_threads, max_threads);
    p->cap_threads = max_threads;
    p->min_threads = min_threads;
    atomic_store(&p->queue_tasks, 1); /* DefaultQueueTasks */
    atomic_store(&p->add_timeout, 0); /* DefaultAddTimeOut */
    return p;
}

int threadpool_set_max_threads(struct threadpool *p, int max_threads)
{
    struct threadpool_worker **w;

    if (max_threads < p->min_threads || max_threads < 1)
        return -1;
    os_mutex_lock(p->list_lock);
    if (max_threads > p->cap_threads) {
        w = realloc(p->workers, (size_t)max_threads * sizeof *w);
        if (!w) {
            os_mutex_unlock(p->list_lock);
            return -1;
        }
        p->workers = w;
        p->cap_threads = max_threads;
    }
    atomic_store(&p->max_threads, max_threads);
    os_mutex_unlock(p->list_lock);
    return 0;
}

void threadpool_set_queue_tasks(struct threadpool *p, int on)
{
    atomic_store(&p->queue_tasks, on);
}

void threadpool_set_add_timeout(struct threadpool *p, int ms)
{
    atomic_store(&p->add_timeout, ms);
}

unsigned long threadpool_add_attempts(struct threadpool *p)
{
    return atomic_load(&p->add_attempts);
}

/* Wait for FThreadDoneEvent (after ResetEvent); 1 when it timed out. */
static int threadpool_wait_thread_done(struct threadpool *p, int ms)
{
    int timed_out = 0;

    os_mutex_lock(p->done_lock);
    p->done_signalled = 0;
    while (!p->done_signalled && !timed_out)
        timed_out = os_cond_timedwait(p->done_cond, p->done_lock, ms);
    p->done_signalled = 0;
    os_mutex_unlock(p->done_lock);
    return timed_out;
}

/* DoAddTask: find a thread with an empty slot, or start one while fewer than
 * MaxThreads exist.  With QueueTasks on (the default) nothing else happens
 * when there is none: the loop goes round again, holding whatever locks its
 * caller holds, until a thread frees up (defect B7's spin).  Only with
 * QueueTasks off and AddTimeout > 0 does it wait, and give up. */
static int threadpool_do_add_task(struct threadpool *p,
                                  struct threadpool_task *t)
{
    for (;;) {
        struct threadpool_worker *w;

        atomic_fetch_add(&p->add_attempts, 1);
        os_mutex_lock(p->task_queue_lock);
        w = threadpool_get_available_thread(p);
        if (!w && threadpool_thread_count(p) < atomic_load(&p->max_threads))
            w = threadpool_add_thread(p);
        os_mutex_unlock(p->task_queue_lock);
        if (w && threadpool_set_task(w, t))
            return 1;
        /* Not upstream: with no thread at all (none could be started) the
         * loop could never end. */
        if (!w && threadpool_thread_count(p) == 0)
            return 0;
        if (!atomic_load(&p->queue_tasks) && atomic_load(&p->add_timeout) > 0 &&
            threadpool_wait_thread_done(p, atomic_load(&p->add_timeout)))
            return 0;
    }
}

/* AddTaskToQueue. */
static void threadpool_add_task_to_queue(struct threadpool *p,
                                         struct threadpool_task *t)
{
    os_mutex_lock(p->wait_lock);
    t->next = p->wait_head;
    p->wait_head = t; /* the newest is taken first, as L[L.Count-1] */
    os_mutex_unlock(p->wait_lock);
}

void threadpool_check_queued_tasks(struct threadpool *p)
{
    os_mutex_lock(p->wait_lock);
    while (p->wait_head) {
        struct threadpool_task *t = p->wait_head, *next = t->next;

        if (!threadpool_do_add_task(p, t))
            break;
        p->wait_head = next;
    }
    os_mutex_unlock(p->wait_lock);
}

int threadpool_add_task(struct threadpool *p, threadpool_task_fn fn, void *arg)
{
    struct threadpool_task *t = calloc(1, sizeof *t);

    if (!t)
        return -1;
    t->fn = fn;
    t->arg = arg;
    while (threadpool_thread_count(p) < p->min_threads)
        if (!threadpool_add_thread(p))
            break;
    threadpool_check_queued_tasks(p);
    if (threadpool_do_add_task(p, t))
        return 0;
    if (atomic_load(&p->queue_tasks)) {
        threadpool_add_task_to_queue(p, t);
        return 0;
    }
    free(t);
    return -1;
}

int threadpool_cancel_queued_tasks(struct threadpool *p,
                                   void (*cancel)(void *arg))
{
    struct threadpool_task *t;
    int n = 0;

    os_mutex_lock(p->wait_lock);
    t = p->wait_head;
    p->wait_head = NULL;
    os_mutex_unlock(p->wait_lock);
    while (t) {
        struct threadpool_task *next = t->next;

        if (cancel)
            cancel(t->arg);
        free(t);
        t = next;
        n++;
    }
    return n;
}

/* TerminateThreads: every thread ends after its running task. */
static void threadpool_terminate_threads(struct threadpool *p)
{
    int i;

    os_mutex_lock(p->list_lock);
    for (i = 0; i < p->nworkers; i++) {
        struct threadpool_worker *w = p->workers[i];

        os_mutex_lock(w->lock);
        w->terminated = 1;
        os_cond_signal(w->event);
        os_mutex_unlock(w->lock);
    }
    os_mutex_unlock(p->list_lock);
}

/* DoTerminateRunningTasks(True): TerminateThreads, then wait until no
 * thread has a task (upstream sleeps DefaultTerminateWait between looks;
 * here the wait on FThreadDoneEvent ends early when a task is done). */
void threadpool_terminate_running_tasks(struct threadpool *p)
{
    threadpool_terminate_threads(p);
    while (threadpool_busy_thread_count(p) > 0)
        threadpool_wait_thread_done(p, THREADPOOL_TERMINATE_WAIT_MS);
}

void threadpool_free(struct threadpool *p)
{
    int i;

    if (!p)
        return;
    if (p->workers && p->list_lock && p->wait_lock) {
        threadpool_cancel_queued_tasks(p, NULL);
        threadpool_terminate_running_tasks(p);
        /* TThreadPoolList.Destroy: WaitFor each thread, outside the lock
         * (nothing adds threads any more). */
        for (i = 0; i < p->nworkers; i++) {
            os_thread_join(p->workers[i]->thread);
            threadpool_worker_free(p->workers[i]);
        }
    }
    free(p->workers);
    os_cond_free(p->done_cond);
    os_mutex_free(p->done_lock);
    os_mutex_free(p->wait_lock);
    os_mutex_free(p->list_lock);
    os_mutex_free(p->task_queue_lock);
    free(p);
}
