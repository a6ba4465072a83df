/* threadpool.h - TFPSimpleThreadPool (fcl-base fpthreadpool), as far as the
 * pooled connection handler uses it.
 *
 * Upstream's shape, kept because defect B7 lives in it: a list of task
 * threads, each with ONE task slot; AddTask hands a task to a thread whose
 * slot is empty (starting a thread while fewer than MaxThreads exist).  With
 * QueueTasks True (DefaultQueueTasks) DoAddTask never waits on anything and
 * never gives up: it loops until some thread's slot is empty.  The wait
 * queue is only reached when DoAddTask fails, which it then never does. */
#ifndef SERVER_MIN_THREADPOOL_H
#define SERVER_MIN_THREADPOOL_H

struct threadpool;

typedef void (*threadpool_task_fn)(void *arg);

/* Create: MaxThreads and MinThreads (upstream: ProcessorCount and
 * ProcessorCount-1); no thread starts before the first AddTask.  QueueTasks
 * True, AddTimeout 0; TFPPooledConnectionHandler.CreatePool then sets
 * AddTimeout 30 (see threadpool_set_add_timeout).  NULL with err filled. */
struct threadpool *threadpool_new(int max_threads, int min_threads, char *err);

/* SetMaxThreads: -1 (unchanged) when below MinThreads. */
int threadpool_set_max_threads(struct threadpool *p, int max_threads);

/* QueueTasks and AddTimeout (ms): only with QueueTasks off and AddTimeout > 0
 * does DoAddTask wait for a thread, and give up after AddTimeout. */
void threadpool_set_queue_tasks(struct threadpool *p, int on);
void threadpool_set_add_timeout(struct threadpool *p, int ms);

/* AddTask: start threads up to MinThreads, CheckQueuedTasks, DoAddTask, and
 * when that fails and QueueTasks is on, AddTaskToQueue.  0 when the task
 * runs or is queued (the pool then owns it), -1 when not (out of memory, no
 * thread could be started and QueueTasks is off, or the AddTimeout passed). */
int threadpool_add_task(struct threadpool *p, threadpool_task_fn fn, void *arg);

/* CheckQueuedTasks: hand queued tasks (newest first) to free threads. */
void threadpool_check_queued_tasks(struct threadpool *p);

/* CancelQueuedTasks: drop tasks not started; returns how many, and calls
 * cancel(arg) for each so their owners can be released. */
int threadpool_cancel_queued_tasks(struct threadpool *p,
                                   void (*cancel)(void *arg));

/* TerminateRunningTasks: every thread ends after its running task; returns
 * once none runs one.  No task can be added after it. */
void threadpool_terminate_running_tasks(struct threadpool *p);

/* MaxThreads (the property's read). */
int threadpool_max_threads(struct threadpool *p);

/* ThreadCount and BusyThreadCount. */
int threadpool_thread_count(struct threadpool *p);
int threadpool_busy_thread_count(struct threadpool *p);

/* How many times DoAddTask has looked for a free thread (for tests: a count
 * that proves the loop ran, without timing it). */
unsigned long threadpool_add_attempts(struct threadpool *p);

/* Destroy: CancelQueuedTasks, TerminateRunningTasks (a running task
 * finishes), join the threads, free. */
void threadpool_free(struct threadpool *p);

#endif
