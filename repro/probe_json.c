/* probe_json.c - the --json output: one object on one line.  Keys are a
 * contract (repro/kit.py, tests/integration read them): add, never rename. */
#include "probe.h"
#include "probe_stats.h"

#include "../common/util.h"

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

void jstr(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p); /* bytes as Latin-1: always valid JSON */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void jnum(FILE *f, bool present, double v)
{
    if (present)
        fprintf(f, "%.1f", v);
    else
        fputs("null", f);
}

/* ,"key":[v0,v1,...] */
void jints(FILE *f, const char *key, const int *v, int n)
{
    fprintf(f, ",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void jsummary(FILE *f, const struct pst_summary *s)
{
    bool p = s->n > 0;
    const char *names[] = {"min", "p50", "p95", "p99", "max"};
    double vals[] = {s->min, s->p50, s->p95, s->p99, s->max};
    fprintf(f, "{\"n\":%zu", s->n);
    for (int i = 0; i < 5; i++) {
        fprintf(f, ",\"%s\":", names[i]);
        jnum(f, p, vals[i]);
    }
    fputc('}', f);
}

static bool is(const char *a, const char *b) { return strcmp(a, b) == 0; }

void jparams(FILE *f, const struct opts *o, const char *scn)
{
    fprintf(f, "{\"path\":");
    jstr(f, o->path);
    fprintf(f, ",\"deadline_ms\":%d", o->deadline_ms);
    if (is(scn, "seq") || is(scn, "idle-gap") || is(scn, "compare") || is(scn, "load"))
        fprintf(f, ",\"n\":%d", o->n);
    if (is(scn, "idle-gap"))
        fprintf(f, ",\"gap_ms\":%d", o->gap_ms);
    if (is(scn, "pipeline"))
        fprintf(f, ",\"k\":%d", o->k);
    if (is(scn, "pool"))
        fprintf(f, ",\"connections\":%d,\"rounds\":%d,\"max_idle_ms\":%d,\"seed\":%llu", o->connections,
                o->rounds, o->max_idle_ms, o->seed);
    if (is(scn, "load") || is(scn, "fdscale"))
        fprintf(f, ",\"connections\":%d", o->connections);
    if (is(scn, "fdscale"))
        fprintf(f, ",\"sample\":%d", o->sample);
    fprintf(f, ",\"max_body\":%llu}", o->max_body);
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
static void jper_request(FILE *f, const struct run *R)
{
    fputs(",\"latency_us\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jnum(f, R->recs[i].oc == OC_RESPONSE, R->recs[i].latency_us);
    }
    fputs("],\"status\":[", f);
    for (int i = 0; i < R->nreq; i++)
        R->recs[i].oc == OC_RESPONSE ? fprintf(f, "%s%d", i ? "," : "", R->recs[i].status)
                                     : fprintf(f, "%snull", i ? "," : "");
    fputs("],\"connection_header\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, R->recs[i].oc == OC_RESPONSE ? R->recs[i].connection : NULL);
    }
    fputs("],\"keep_alive_header\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, R->recs[i].oc == OC_RESPONSE ? R->recs[i].keep_alive : NULL);
    }
    fputs("],\"body_len\":[", f);
    for (int i = 0; i < R->nreq; i++)
        R->recs[i].oc == OC_RESPONSE ? fprintf(f, "%s%lld", i ? "," : "", R->recs[i].body_len)
                                     : fprintf(f, "%snull", i ? "," : "");
    fputs("],\"outcome\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, oc_name[R->recs[i].oc]);
    }
    fputs("],\"conn_index\":[", f);
    for (int i = 0; i < R->nreq; i++)
        fprintf(f, "%s%d", i ? "," : "", R->recs[i].conn_index);
    fputs("],\"req_local_port\":[", f);
    for (int i = 0; i < R->nreq; i++)
        fprintf(f, "%s%d", i ? "," : "", R->recs[i].local_port);
    fputc(']', f);
}

static void jerrors(FILE *f, const int *errors)
{
    fputs(",\"errors\":{", f);
    for (int oc = OC_EOF; oc < OC_COUNT; oc++)
        fprintf(f, "%s\"%s\":%d", oc == OC_EOF ? "" : ",", oc_errkey[oc], errors[oc]);
    fputc('}', f);
}

static void jms(FILE *f, const char *key, double ms)
{
    fprintf(f, ",\"%s\":", key);
    if (ms >= 0)
        fprintf(f, "%.3f", ms);
    else
        fputs("null", f);
}

/* Keys only some scenarios have. */
static void jscenario_extras(FILE *f, const struct run *R)
{
    if (is(R->scenario, "pipeline") || is(R->scenario, "post-pipeline"))
        fprintf(f, ",\"pipelined\":%d,\"writes\":%d", R->pipelined, R->writes);
    if (is(R->scenario, "post-pipeline"))
        fprintf(f, ",\"echo_ok\":%s", R->echo_ok < 0 ? "null" : R->echo_ok ? "true" : "false");
    if (is(R->scenario, "close")) {
        fprintf(f, ",\"announced_close\":%s,\"unannounced_close\":%s,\"reuse_outcome\":",
                R->announced_close ? "true" : "false", R->unannounced_close ? "true" : "false");
        jstr(f, R->reuse_outcome);
        jms(f, "closed_after_response_ms", R->closed_after_response_ms);
    }
    if (is(R->scenario, "pool"))
        fprintf(f, ",\"stale_failures\":%d,\"reconnects\":%d,\"retired_announced\":%d,\"retired_keepalive_timeout\":%d",
                R->stale_failures, R->reconnects, R->retired_announced, R->retired_keepalive_timeout);
}

void json_run(FILE *f, const struct run *R, const struct opts *o, const char *params_scn)
{
    struct lat_stats s;
    compute_stats(R, &s);
    fprintf(f, "{\"probe\":1,\"scenario\":");
    jstr(f, R->scenario);
    fprintf(f, ",\"host\":");
    jstr(f, o->host);
    fprintf(f, ",\"port\":%d,\"params\":", o->port);
    jparams(f, o, params_scn);
    fprintf(f, ",\"requests_sent\":%d,\"responses\":%d,\"connects\":%d", R->requests_sent, R->responses,
            R->connects);
    jints(f, "local_ports", R->ports, R->nports);
    fprintf(f, ",\"reused\":%s", run_reused(R) ? "true" : "false");
    jper_request(f, R);
    fputs(",\"stats_us\":{\"all\":", f);
    jsummary(f, &s.all);
    fputs(",\"first\":", f);
    jnum(f, s.has_first, s.first);
    fputs(",\"rest\":", f);
    jsummary(f, &s.rest);
    fputc('}', f);
    jerrors(f, R->errors);
    fprintf(f, ",\"server_closed\":%s", R->server_closed ? "true" : "false");
    jms(f, "server_closed_after_ms", R->server_closed_after_ms);
    fputs(",\"close_kind\":", f);
    jstr(f, R->close_kind);
    fprintf(f, ",\"unexpected_bytes\":%lld", R->unexpected_bytes);
    jscenario_extras(f, R);
    fputc('}', f);
}

void json_compare(FILE *f, const struct run *A, const struct run *B, const struct opts *o)
{
    struct lat_stats sa, sb;
    compute_stats(A, &sa);
    compute_stats(B, &sb);
    fprintf(f, "{\"probe\":1,\"scenario\":\"compare\",\"host\":");
    jstr(f, o->host);
    fprintf(f, ",\"port\":%d,\"params\":", o->port);
    jparams(f, o, "compare");
    fputs(",\"keepalive\":", f);
    json_run(f, A, o, "seq");
    fputs(",\"fresh\":", f);
    json_run(f, B, o, "seq");
    fputs(",\"ratio_p50\":", f);
    if (sa.rest.n > 0 && sb.all.n > 0 && sb.all.p50 > 0)
        fprintf(f, "%.3f", sa.rest.p50 / sb.all.p50);
    else
        fputs("null", f);
    fputs("}\n", f);
}
