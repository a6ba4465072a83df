/* gpool.c - see gpool.h.  Workers are detached (retired ones are never
 * joined, as in TThreadPool); the drain waits for the alive count to reach
 * zero instead. */
#include "gpool.h"

#include <stdio.h>
#include <stdlib.h>

#include "../server-min/log.h"
#include "os.h"

struct gpool_item {
    struct dispatch_task t;
    struct gpool_item *next;
};

struct gpool {
    os_mutex *mu;
    os_cond *sem;            /* FQueueSemaphore: permits below */
    os_cond *all_gone;
    struct gpool_item *head, *tail;
    int queued;              /* FRequestCount: queued, not started */
    int idle;                /* FIdleThreads */
    int threads;             /* FThreadCount */
    int permits;
    int min_threads, max_threads, retire_ms;
    int shutdown, start_failed;
    int peak;
    unsigned long created, retired, completed;
};

static void *gpool_worker(void *arg);

/* AddThreadToPool (queue lock held).  -1 when the thread cannot start. */
static int gpool_add_thread(struct gpool *p)
{
    char err[OS_ERR_LEN];

    if (p->start_failed)
        return -1;
    p->threads++;
    if (os_thread_start_detached(err, gpool_worker, p) != 0) {
        p->threads--;
        p->start_failed = 1;   /* say it once, stop trying */
        log_line("global-pool: cannot add worker %d: %s", p->threads + 1, err);
        return -1;
    }
    p->created++;
    if (p->threads > p->peak)
        p->peak = p->threads;
    return 0;
}

/* GrowPool: to the minimum at once, else one more worker when fewer are idle
 * than items wait, while below the maximum. */
static void gpool_grow(struct gpool *p)
{
    int need_min = p->threads < p->min_threads;
    int deficit = p->idle < p->queued;
    int room = p->threads < p->max_threads;

    if (!need_min && !(deficit && room))
        return;
    if (gpool_add_thread(p) != 0)
        return;
    while (p->threads < p->min_threads)
        if (gpool_add_thread(p) != 0)
            return;
}

/* Take the oldest item (lock held); NULL when the queue is empty. */
static struct gpool_item *gpool_take(struct gpool *p)
{
    struct gpool_item *it = p->head;

    if (it) {
        p->head = it->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
    }
    return it;
}

/* GetWorkItemForThread's loop: publish idle, look for work, wait on the
 * semaphore, retire after retire_ms of nothing above the minimum. */
static void *gpool_worker(void *arg)
{
    struct gpool *p = arg;
    int idle = 0;

    os_mutex_lock(p->mu);
    for (;;) {
        struct gpool_item *it;
        int timed_out = 0;

        if (!idle) {
            p->idle++;
            idle = 1;
        }
        it = gpool_take(p);
        if (it) {
            p->idle--;
            idle = 0;
            os_mutex_unlock(p->mu);
            it->t.run(it->t.arg);
            free(it);
            os_mutex_lock(p->mu);
            p->completed++;
            continue;
        }
        if (p->shutdown)
            break;
        while (p->permits == 0 && !p->shutdown && !timed_out)
            timed_out = os_cond_timedwait(p->sem, p->mu, p->retire_ms);
        if (p->permits > 0) {
            p->permits--;
            continue;
        }
        if (timed_out && p->threads > p->min_threads) {
            p->retired++;
            break;
        }
    }
    if (idle)
        p->idle--;
    p->threads--;
    if (p->threads == 0)
        os_cond_broadcast(p->all_gone);
    os_mutex_unlock(p->mu);
    return NULL;
}

struct gpool *gpool_new(char *err, int min_threads, int max_threads,
                        int retire_ms)
{
    struct gpool *p = calloc(1, sizeof *p);

    if (p) {
        p->mu = os_mutex_new();
        p->sem = os_cond_new();
        p->all_gone = os_cond_new();
    }
    if (!p || !p->mu || !p->sem || !p->all_gone || min_threads < 0 ||
        max_threads < 1 || retire_ms < 1) {
        if (err)
            snprintf(err, OS_ERR_LEN, "global pool: min=%d max=%d retire=%d ms: %s",
                     min_threads, max_threads, retire_ms,
                     p ? "bad limits" : "out of memory");
        gpool_free(p);
        return NULL;
    }
    p->min_threads = min_threads;
    p->max_threads = max_threads;
    p->retire_ms = retire_ms;
    /* TThreadPool creates workers lazily: none until the first item. */
    return p;
}

/* WorkQueued: count the item, release the semaphore when a worker is idle,
 * then GrowPool. */
enum submit_result gpool_submit(struct gpool *p, struct dispatch_task t)
{
    struct gpool_item *it = malloc(sizeof *it);
    enum submit_result r = SUBMIT_OK;

    if (!it)
        return SUBMIT_FULL;
    it->t = t;
    it->next = NULL;
    os_mutex_lock(p->mu);
    if (p->shutdown) {
        r = SUBMIT_CLOSED;
    } else {
        if (p->tail)
            p->tail->next = it;
        else
            p->head = it;
        p->tail = it;
        p->queued++;
        if (p->idle > 0) {
            p->permits++;
            os_cond_signal(p->sem);
        }
        gpool_grow(p);
        if (p->threads == 0) {   /* nobody will ever run it */
            p->head = p->tail = NULL;
            p->queued = 0;
            r = SUBMIT_FULL;
        } else {
            it = NULL;
        }
    }
    os_mutex_unlock(p->mu);
    free(it);
    return r;
}

void gpool_drain(struct gpool *p)
{
    os_mutex_lock(p->mu);
    p->shutdown = 1;
    os_cond_broadcast(p->sem);
    while (p->threads > 0)
        os_cond_wait(p->all_gone, p->mu);
    os_mutex_unlock(p->mu);
}

void gpool_get_stats(struct gpool *p, struct gpool_stats *s)
{
    os_mutex_lock(p->mu);
    s->min_threads = p->min_threads;
    s->max_threads = p->max_threads;
    s->threads = p->threads;
    s->peak = p->peak;
    s->created = p->created;
    s->retired = p->retired;
    s->completed = p->completed;
    s->queued = p->queued;
    os_mutex_unlock(p->mu);
}

void gpool_free(struct gpool *p)
{
    if (!p)
        return;
    if (p->mu)
        gpool_drain(p);
    os_cond_free(p->all_gone);
    os_cond_free(p->sem);
    os_mutex_free(p->mu);
    free(p);
}
