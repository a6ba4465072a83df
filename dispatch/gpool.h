/* gpool.h - a model of the global pool Horse's epoll provider dispatched to
 * before PR #553: TThreadPool.Default, which the provider configured with
 * MinWorkerThreads = ProcessorCount * 8 and MaxWorkerThreads = 2048.
 *
 * Delphi's RTL source is not public; the growth and retire rules follow the
 * open re-implementation of System.Threading in FPC trunk (routine names
 * TThreadPool.WorkQueued, GrowPool, GetWorkItemForThread), which mirrors
 * Delphi's behaviour:
 *  - the first work item fills the pool up to the minimum at once;
 *  - every queued item that finds fewer idle workers than queued items adds
 *    one worker, up to the maximum ("idle deficit");
 *  - an idle worker (waiting on the pool's semaphore, a futex) retires when
 *    it has waited retire_ms for nothing and the pool is above its minimum.
 * The pool is unbounded: a submit never says FULL unless no thread exists
 * and none can be started.  The CPU-usage monitor thread (GrowIfStarved)
 * only acts at the maximum and is not modelled. */
#ifndef DISPATCH_GPOOL_H
#define DISPATCH_GPOOL_H

#include "task.h"

struct gpool;

struct gpool_stats {
    int min_threads, max_threads;
    int threads;              /* alive now */
    int peak;                 /* most alive at once */
    unsigned long created, retired;
    unsigned long completed;
    int queued;
};

struct gpool *gpool_new(char *err, int min_threads, int max_threads,
                        int retire_ms);
enum submit_result gpool_submit(struct gpool *p, struct dispatch_task t);
/* TThreadPool.Destroy: refuse new work, run what is queued, wait for every
 * worker to leave.  Idempotent. */
void gpool_drain(struct gpool *p);
void gpool_get_stats(struct gpool *p, struct gpool_stats *s);
void gpool_free(struct gpool *p);

#endif
