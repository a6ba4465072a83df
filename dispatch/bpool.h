/* bpool.h - the bounded executor Horse's epoll provider got in PR #553
 * (epmBoundedPool): a fixed number of workers started up front, a queue of
 * fixed capacity, an explicit answer when the queue is full (the caller
 * closes the connection instead of losing the task), and a drain on
 * shutdown (stop accepting work, run every accepted task, then return). */
#ifndef DISPATCH_BPOOL_H
#define DISPATCH_BPOOL_H

#include "task.h"

struct bpool;

struct bpool_stats {
    int workers;
    int capacity;
    unsigned long accepted;     /* submits answered SUBMIT_OK */
    unsigned long rejected;     /* submits answered SUBMIT_FULL */
    unsigned long completed;    /* tasks that ran to the end */
    int queued;                 /* waiting now */
    int running;                /* executing now */
    int closing;                /* a drain has begun */
};

/* Starts `workers` threads.  NULL with err filled when a thread cannot
 * start (the ones that did are stopped first). */
struct bpool *bpool_new(char *err, int workers, int capacity);

/* SUBMIT_OK, SUBMIT_FULL (queue at capacity) or SUBMIT_CLOSED (draining). */
enum submit_result bpool_submit(struct bpool *p, struct dispatch_task t);

/* Refuse new work, let the workers run every accepted task, join them.
 * Idempotent. */
void bpool_drain(struct bpool *p);

void bpool_get_stats(struct bpool *p, struct bpool_stats *s);

/* Drains first if that has not happened. */
void bpool_free(struct bpool *p);

#endif
