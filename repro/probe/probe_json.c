/* probe_json.c - the --json output: one object on one line, built with
 * jansson (common/kjson.h: strings are bytes as Latin-1, reals the numbers
 * printf("%.1f") / ("%.3f") wrote).  Keys are a contract (repro/harness/kit.py,
 * tests/integration read them): add, never rename. */
#include "probe.h"
#include "probe_stats.h"

#include "../../common/kjson.h"
#include "../../common/util.h"

#include <stdlib.h>
#include <string.h>

void compute_stats(const struct run *R, struct lat_stats *s)
{
    double *v = xreallocarray(NULL, (size_t)R->nreq + 1, sizeof *v);
    size_t n = 0;
    for (int i = 0; i < R->nreq; i++)
        if (R->recs[i].oc == OC_RESPONSE)
            v[n++] = R->recs[i].latency_us;
    pst_summarise(v, n, &s->all);
    s->has_first = R->nreq > 0 && R->recs[0].oc == OC_RESPONSE;
    s->first = s->has_first ? R->recs[0].latency_us : 0;
    n = 0;
    for (int i = 1; i < R->nreq; i++)
        if (R->recs[i].oc == OC_RESPONSE)
            v[n++] = R->recs[i].latency_us;
    pst_summarise(v, n, &s->rest);
    free(v);
}

static json_t *jsummary(const struct pst_summary *s)
{
    bool p = s->n > 0;
    json_t *o = json_object();
    kj_set(o, "n", json_integer((json_int_t)s->n));
    kj_set(o, "min", kj_fixed(p, s->min, 1));
    kj_set(o, "p50", kj_fixed(p, s->p50, 1));
    kj_set(o, "p95", kj_fixed(p, s->p95, 1));
    kj_set(o, "p99", kj_fixed(p, s->p99, 1));
    kj_set(o, "max", kj_fixed(p, s->max, 1));
    return o;
}

static bool is(const char *a, const char *b) { return strcmp(a, b) == 0; }

static json_t *jparams(const struct opts *o, const char *scn)
{
    json_t *p = json_object();
    kj_set(p, "path", kj_bytes(o->path));
    kj_set(p, "deadline_ms", json_integer(o->deadline_ms));
    if (is(scn, "seq") || is(scn, "idle-gap") || is(scn, "compare") || is(scn, "load"))
        kj_set(p, "n", json_integer(o->n));
    if (is(scn, "idle-gap"))
        kj_set(p, "gap_ms", json_integer(o->gap_ms));
    if (is(scn, "pipeline"))
        kj_set(p, "k", json_integer(o->k));
    if (is(scn, "pool")) {
        kj_set(p, "connections", json_integer(o->connections));
        kj_set(p, "rounds", json_integer(o->rounds));
        kj_set(p, "max_idle_ms", json_integer(o->max_idle_ms));
        kj_set(p, "seed", json_integer((json_int_t)o->seed)); /* <= INT64_MAX (probe_args.c) */
    }
    if (is(scn, "load") || is(scn, "fdscale"))
        kj_set(p, "connections", json_integer(o->connections));
    if (is(scn, "fdscale")) {
        kj_set(p, "sample", json_integer(o->sample));
        kj_set(p, "sample_requests", json_integer(o->sample_requests));
        kj_set(p, "accept_wait_ms", json_integer(o->accept_wait_ms));
        kj_set(p, "accept_stall_ms", json_integer(o->accept_stall_ms));
    }
    kj_set(p, "max_body", json_integer((json_int_t)o->max_body));
    return p;
}

/* {"probe":1,"scenario":...,"host":...,"port":...,"params":...}: the head
 * every output object starts with. */
json_t *json_head(const char *scenario, const struct opts *o, const char *params_scn)
{
    json_t *j = json_object();
    kj_set(j, "probe", json_integer(1));
    kj_set(j, "scenario", kj_bytes(scenario));
    kj_set(j, "host", kj_bytes(o->host));
    kj_set(j, "port", json_integer(o->port));
    kj_set(j, "params", jparams(o, params_scn));
    return j;
}

bool run_reused(const struct run *R)
{
    /* Reuse is proven when some connection served 2+ responses. */
    for (int i = 0; i < R->nreq; i++)
        for (int j = i + 1; j < R->nreq; j++)
            if (R->recs[i].oc == OC_RESPONSE && R->recs[j].oc == OC_RESPONSE && R->recs[i].conn_index >= 0 &&
                R->recs[i].conn_index == R->recs[j].conn_index && R->recs[i].local_port == R->recs[j].local_port)
                return true;
    return false;
}

/* Per-request arrays: value where a response came, null elsewhere. */
static void jper_request(json_t *j, const struct run *R)
{
    static const char *const keys[] = {"latency_us",   "status", "connection_header", "keep_alive_header",
                                       "body_len",     "outcome", "conn_index",       "req_local_port"};
    enum { LAT, STATUS, CONN, KA, BODY, OUTCOME, INDEX, PORT, NKEYS };
    json_t *a[NKEYS];
    for (int k = 0; k < NKEYS; k++)
        a[k] = json_array();
    for (int i = 0; i < R->nreq; i++) {
        const struct rec *r = &R->recs[i];
        bool ok = r->oc == OC_RESPONSE;
        kj_push(a[LAT], kj_fixed(ok, r->latency_us, 1));
        kj_push(a[STATUS], ok ? json_integer(r->status) : json_null());
        kj_push(a[CONN], kj_bytes(ok ? r->connection : NULL));
        kj_push(a[KA], kj_bytes(ok ? r->keep_alive : NULL));
        kj_push(a[BODY], ok ? json_integer(r->body_len) : json_null());
        kj_push(a[OUTCOME], kj_bytes(oc_name[r->oc]));
        kj_push(a[INDEX], json_integer(r->conn_index));
        kj_push(a[PORT], json_integer(r->local_port));
    }
    for (int k = 0; k < NKEYS; k++)
        kj_set(j, keys[k], a[k]);
}

json_t *jerrors(const int *errors)
{
    json_t *e = json_object();
    for (int oc = OC_EOF; oc < OC_COUNT; oc++)
        kj_set(e, oc_errkey[oc], json_integer(errors[oc]));
    return e;
}

/* A time in ms (3 decimals), null when negative (not observed). */
static json_t *jms(double ms) { return kj_fixed(ms >= 0, ms, 3); }

/* Keys only some scenarios have. */
static void jscenario_extras(json_t *j, const struct run *R)
{
    if (is(R->scenario, "pipeline") || is(R->scenario, "post-pipeline")) {
        kj_set(j, "pipelined", json_integer(R->pipelined));
        kj_set(j, "writes", json_integer(R->writes));
    }
    if (is(R->scenario, "post-pipeline"))
        kj_set(j, "echo_ok", R->echo_ok < 0 ? json_null() : json_boolean(R->echo_ok));
    if (is(R->scenario, "close")) {
        kj_set(j, "announced_close", json_boolean(R->announced_close));
        kj_set(j, "unannounced_close", json_boolean(R->unannounced_close));
        kj_set(j, "reuse_outcome", kj_bytes(R->reuse_outcome));
        kj_set(j, "closed_after_response_ms", jms(R->closed_after_response_ms));
    }
    if (is(R->scenario, "pool")) {
        kj_set(j, "stale_failures", json_integer(R->stale_failures));
        kj_set(j, "reconnects", json_integer(R->reconnects));
        kj_set(j, "retired_announced", json_integer(R->retired_announced));
        kj_set(j, "retired_keepalive_timeout", json_integer(R->retired_keepalive_timeout));
    }
}

json_t *json_run(const struct run *R, const struct opts *o, const char *params_scn)
{
    struct lat_stats s;
    compute_stats(R, &s);
    json_t *j = json_head(R->scenario, o, params_scn);
    kj_set(j, "requests_sent", json_integer(R->requests_sent));
    kj_set(j, "responses", json_integer(R->responses));
    kj_set(j, "connects", json_integer(R->connects));
    kj_set(j, "local_ports", kj_ints(R->ports, R->nports));
    kj_set(j, "reused", json_boolean(run_reused(R)));
    jper_request(j, R);
    json_t *st = json_object();
    kj_set(st, "all", jsummary(&s.all));
    kj_set(st, "first", kj_fixed(s.has_first, s.first, 1));
    kj_set(st, "rest", jsummary(&s.rest));
    kj_set(j, "stats_us", st);
    kj_set(j, "errors", jerrors(R->errors));
    kj_set(j, "server_closed", json_boolean(R->server_closed));
    kj_set(j, "server_closed_after_ms", jms(R->server_closed_after_ms));
    kj_set(j, "close_kind", kj_bytes(R->close_kind));
    kj_set(j, "unexpected_bytes", json_integer(R->unexpected_bytes));
    jscenario_extras(j, R);
    return j;
}

json_t *json_compare(const struct run *A, const struct run *B, const struct opts *o)
{
    struct lat_stats sa, sb;
    compute_stats(A, &sa);
    compute_stats(B, &sb);
    json_t *j = json_head("compare", o, "compare");
    kj_set(j, "keepalive", json_run(A, o, "seq"));
    kj_set(j, "fresh", json_run(B, o, "seq"));
    bool ratio = sa.rest.n > 0 && sb.all.n > 0 && sb.all.p50 > 0;
    kj_set(j, "ratio_p50", kj_fixed(ratio, ratio ? sa.rest.p50 / sb.all.p50 : 0, 3));
    return j;
}

void json_out(FILE *f, json_t *j)
{
    if (kj_print_line(f, j) == 0)
        fputc('\n', f); /* a write error shows in ferror(), checked in main */
}
