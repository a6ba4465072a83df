/* test_request.c - suite "request": what the reader's results become. */
#include <string.h>

#include "request.h"
#include "unit.h"

static void test_start_line_fields(void)
{
    struct http_request *r = request_new();
    const char *url = "/slow?ms=5&x=1";

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ASSERT_INT(request_set_start_line(r, "GET", 3, url, strlen(url), "1.1", 3), 0);
    ASSERT_STR(r->method, "GET");
    ASSERT_STR(r->url, "/slow?ms=5&x=1");
    ASSERT_STR(r->path_info, "/slow");
    ASSERT_STR(r->query, "ms=5&x=1");
    ASSERT_STR(r->protocol_version, "1.1");
    request_free(r);

    r = request_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ASSERT_INT(request_set_start_line(r, "GET", 3, "/a", 2, "", 0), 0);
    ASSERT_STR(r->path_info, "/a");
    ASSERT_STR(r->query, "");
    ASSERT_STR(r->protocol_version, "");
    request_free(r);
}

static void test_fields(void)
{
    struct http_request *r = request_new();

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ASSERT_INT(request_set_field(r, "Host", 4, "a", 1), 0);
    ASSERT_INT(request_set_field(r, "Connection", 10, "close", 5), 0);
    ASSERT_INT(r->header_count, 2);
    /* A later header of the same name (any case) replaces the value. */
    ASSERT_INT(request_set_field(r, "HOST", 4, "b", 1), 0);
    ASSERT_INT(r->header_count, 2);
    ASSERT_STR(request_get_header(r, "host"), "b");
    ASSERT_STR(request_get_header(r, "CONNECTION"), "close");
    CU_ASSERT_PTR_NULL(request_get_header(r, "Content-Length"));
    ASSERT_INT(request_content_length(r), 0);
    request_free(r);
}

static void test_many_fields_grow(void)
{
    struct http_request *r = request_new();
    char name[16];
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (i = 0; i < 40; i++) {
        int n = snprintf(name, sizeof name, "X-H%d", i);

        ASSERT_INT(request_set_field(r, name, (size_t)n, name, (size_t)n), 0);
    }
    ASSERT_INT(r->header_count, 40);
    ASSERT_STR(request_get_header(r, "x-h0"), "X-H0");
    ASSERT_STR(request_get_header(r, "x-h39"), "X-H39");
    request_free(r);
}

static void test_content_length_header(void)
{
    struct http_request *r = request_new();

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ASSERT_INT(request_set_field(r, "content-length", 14, "17", 2), 0);
    ASSERT_INT(request_content_length(r), 17);
    ASSERT_INT(request_set_field(r, "Content-Length", 14, "x", 1), 0);
    ASSERT_INT(request_content_length(r), 0);
    ASSERT_INT(request_set_field(r, "Content-Length", 14, "-3", 2), 0);
    ASSERT_INT(request_content_length(r), -3);
    request_free(r);
    request_free(NULL);
}

static const struct unit_test request_tests[] = {
    { "start_line_fields", test_start_line_fields },
    { "fields", test_fields },
    { "many_fields_grow", test_many_fields_grow },
    { "content_length_header", test_content_length_header },
};

int unit_register_request(void)
{
    return UNIT_ADD_SUITE("request", NULL, request_tests);
}
