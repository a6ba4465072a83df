/* task.h - what a loop hands to a pool: one function and its argument (in
 * Horse's provider, the anonymous procedure ProcessClientRead passes to
 * TTask.Run or to the bounded executor). */
#ifndef DISPATCH_TASK_H
#define DISPATCH_TASK_H

struct dispatch_task {
    void (*run)(void *arg);
    void *arg;
};

/* What a submit can answer. */
enum submit_result {
    SUBMIT_OK = 0,
    SUBMIT_FULL = 1,     /* bounded queue at capacity (or no thread at all) */
    SUBMIT_CLOSED = 2,   /* draining: no new work is accepted */
};

#endif
