/* threadpool.c - see threadpool.h. */
#include "threadpool.h"

#include <stdio.h>
#include <stdlib.h>

#include "os.h"

struct threadpool_task {
    threadpool_task_fn fn;
    void *arg;
    struct threadpool_task *next;
};

struct threadpool {
    os_mutex *lock;
    os_cond *wake;
    struct threadpool_task *head, *tail;
    int stopping;
    int nthreads;
    os_thread **threads;
};

static void *threadpool_worker(void *arg)
{
    struct threadpool *p = arg;

    os_block_stop_signals();
    os_mutex_lock(p->lock);
    for (;;) {
        struct threadpool_task *t;

        while (!p->head && !p->stopping)
            os_cond_wait(p->wake, p->lock);
        if (!p->head)
            break;
        t = p->head;
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
        os_mutex_unlock(p->lock);
        t->fn(t->arg);
        free(t);
        os_mutex_lock(p->lock);
    }
    os_mutex_unlock(p->lock);
    return NULL;
}

struct threadpool *threadpool_new(int threads, char *err)
{
    struct threadpool *p = calloc(1, sizeof *p);
    int i;

    if (!p || !(p->lock = os_mutex_new()) || !(p->wake = os_cond_new()) ||
        !(p->threads = calloc((size_t)threads, sizeof *p->threads))) {
        if (p) {
            os_mutex_free(p->lock);
            os_cond_free(p->wake);
            free(p);
        }
        if (err)
            snprintf(err, OS_ERR_LEN, "thread pool: out of memory");
        return NULL;
    }
    for (i = 0; i < threads; i++) {
        p->threads[i] = os_thread_start(err, threadpool_worker, p);
        if (!p->threads[i])
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        threadpool_free(p);
        return NULL;
    }
    return p;
}

int threadpool_add_task(struct threadpool *p, threadpool_task_fn fn, void *arg)
{
    struct threadpool_task *t = malloc(sizeof *t);

    if (!t)
        return -1;
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    os_mutex_lock(p->lock);
    if (p->stopping) {
        os_mutex_unlock(p->lock);
        free(t);
        return -1;
    }
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    os_cond_signal(p->wake);
    os_mutex_unlock(p->lock);
    return 0;
}

int threadpool_cancel_queued_tasks(struct threadpool *p,
                                   void (*cancel)(void *arg))
{
    struct threadpool_task *t;
    int n = 0;

    os_mutex_lock(p->lock);
    t = p->head;
    p->head = p->tail = NULL;
    os_mutex_unlock(p->lock);
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

void threadpool_free(struct threadpool *p)
{
    int i;

    if (!p)
        return;
    os_mutex_lock(p->lock);
    p->stopping = 1;
    os_cond_broadcast(p->wake);
    os_mutex_unlock(p->lock);
    for (i = 0; i < p->nthreads; i++)
        os_thread_join(p->threads[i]);
    threadpool_cancel_queued_tasks(p, NULL);
    free(p->threads);
    os_cond_free(p->wake);
    os_mutex_free(p->lock);
    free(p);
}
