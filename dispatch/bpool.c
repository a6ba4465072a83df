/* bpool.c - see bpool.h.  One mutex guards the ring and the counters; the
 * workers block on a condition variable when the ring is empty. */
#include "bpool.h"

#include <stdio.h>
#include <stdlib.h>

#include "os.h"

struct bpool {
    os_mutex *mu;
    os_cond *not_empty;
    struct dispatch_task *ring;
    int capacity, head, count;
    int size;        /* workers started (stats survive the drain) */
    int nworkers, running, closing, drained;
    os_thread **workers;
    unsigned long accepted, rejected, completed;
};

static void *bpool_worker(void *arg)
{
    struct bpool *p = arg;

    os_mutex_lock(p->mu);
    for (;;) {
        struct dispatch_task t;

        while (p->count == 0 && !p->closing)
            os_cond_wait(p->not_empty, p->mu);
        if (p->count == 0)
            break;   /* closing and nothing left: the drain is complete */
        t = p->ring[p->head];
        p->head = (p->head + 1) % p->capacity;
        p->count--;
        p->running++;
        os_mutex_unlock(p->mu);
        t.run(t.arg);
        os_mutex_lock(p->mu);
        p->running--;
        p->completed++;
    }
    os_mutex_unlock(p->mu);
    return NULL;
}

static void bpool_release(struct bpool *p)
{
    free(p->workers);
    free(p->ring);
    os_cond_free(p->not_empty);
    os_mutex_free(p->mu);
    free(p);
}

struct bpool *bpool_new(char *err, int workers, int capacity)
{
    struct bpool *p = calloc(1, sizeof *p);
    int i;

    if (!p || workers < 1 || capacity < 1)
        goto oom;
    p->capacity = capacity;
    p->mu = os_mutex_new();
    p->not_empty = os_cond_new();
    p->ring = calloc((size_t)capacity, sizeof *p->ring);
    p->workers = calloc((size_t)workers, sizeof *p->workers);
    if (!p->mu || !p->not_empty || !p->ring || !p->workers)
        goto oom;
    for (i = 0; i < workers; i++) {
        p->workers[i] = os_thread_start(err, bpool_worker, p);
        if (!p->workers[i]) {
            bpool_free(p);   /* joins the i workers that did start */
            return NULL;
        }
        p->nworkers = i + 1;
        p->size = i + 1;
    }
    return p;
oom:
    if (err)
        snprintf(err, OS_ERR_LEN, "bounded pool: workers=%d capacity=%d: %s",
                 workers, capacity,
                 workers < 1 || capacity < 1 ? "must be at least 1"
                                             : "out of memory");
    if (p)
        bpool_release(p);
    return NULL;
}

enum submit_result bpool_submit(struct bpool *p, struct dispatch_task t)
{
    enum submit_result r;

    os_mutex_lock(p->mu);
    if (p->closing) {
        r = SUBMIT_CLOSED;
    } else if (p->count == p->capacity) {
        p->rejected++;
        r = SUBMIT_FULL;
    } else {
        p->ring[(p->head + p->count) % p->capacity] = t;
        p->count++;
        p->accepted++;
        os_cond_signal(p->not_empty);
        r = SUBMIT_OK;
    }
    os_mutex_unlock(p->mu);
    return r;
}

void bpool_drain(struct bpool *p)
{
    int i, join;

    os_mutex_lock(p->mu);
    join = !p->drained;
    p->closing = 1;
    p->drained = 1;
    os_cond_broadcast(p->not_empty);
    os_mutex_unlock(p->mu);
    if (!join)
        return;
    for (i = 0; i < p->nworkers; i++)
        os_thread_join(p->workers[i]);
    p->nworkers = 0;
}

void bpool_get_stats(struct bpool *p, struct bpool_stats *s)
{
    os_mutex_lock(p->mu);
    s->workers = p->size;
    s->capacity = p->capacity;
    s->accepted = p->accepted;
    s->rejected = p->rejected;
    s->completed = p->completed;
    s->queued = p->count;
    s->running = p->running;
    s->closing = p->closing;
    os_mutex_unlock(p->mu);
}

void bpool_free(struct bpool *p)
{
    if (!p)
        return;
    bpool_drain(p);
    bpool_release(p);
}
