/* Unit tests: CSV reader and writer helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/csv.h"

static tide_csv_t *open_str(const char *s, tide_error_t *err)
{
    return tide_csv_open_mem(s, strlen(s), "t.csv", err);
}

static void expect_open_error(const char *s, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_csv_t *c = open_str(s, &err);
    if (c) {
        tide_csv_close(c);
        fail_msg("open should fail for input '%s'", s);
    }
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

/* Read rows until an error and check its message. */
static void expect_row_error(const char *s, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_csv_t *c = open_str(s, &err);
    assert_non_null(c);
    int r;
    while ((r = tide_csv_next(c, &err)) == 1)
        ;
    tide_csv_close(c);
    if (r != -1)
        fail_msg("input '%s' should give an error", s);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void test_basic(void **state)
{
    (void)state;
    tide_error_t err;
    const char *in = "# a comment\n"
                     "name,Value , other\n"
                     "\n"
                     "a,1,x\n"
                     "# another comment, with \"quotes\n"
                     "   \n"
                     " b , 2 ,\n";
    tide_csv_t *c = open_str(in, &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_line(c), 2);
    assert_int_equal(tide_csv_ncols(c), 3);
    assert_int_equal(tide_csv_col(c, "name"), 0);
    assert_int_equal(tide_csv_col(c, "value"), 1); /* case-insensitive, trimmed */
    assert_int_equal(tide_csv_col(c, "other"), 2);
    assert_int_equal(tide_csv_col(c, "missing"), -1);
    assert_string_equal(tide_csv_colname(c, 1), "Value");
    assert_null(tide_csv_colname(c, 3));
    assert_string_equal(tide_csv_name(c), "t.csv");

    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_line(c), 4);
    assert_int_equal(tide_csv_nfields(c), 3);
    assert_string_equal(tide_csv_field(c, 0), "a");
    assert_string_equal(tide_csv_field(c, 1), "1");
    assert_string_equal(tide_csv_field(c, 2), "x");
    assert_null(tide_csv_field(c, 3));
    assert_null(tide_csv_field(c, -1));

    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_line(c), 7);
    assert_string_equal(tide_csv_field(c, 0), "b");
    assert_string_equal(tide_csv_field(c, 1), "2");
    assert_string_equal(tide_csv_field(c, 2), "");

    assert_int_equal(tide_csv_next(c, &err), 0);
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
    tide_csv_close(NULL);
}

static void test_quoting_and_crlf(void **state)
{
    (void)state;
    tide_error_t err;
    const char *in = "\xEF\xBB\xBF" "a,b,c\r\n"
                     "\"x, y\",\"say \"\"hi\"\"\",\"two\r\nlines\"\r\n"
                     "  \"  padded  \"  ,\"\",plain\r\n"
                     "1,2,3"; /* no final newline */
    tide_csv_t *c = open_str(in, &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_col(c, "a"), 0); /* BOM skipped */
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_line(c), 2);
    assert_string_equal(tide_csv_field(c, 0), "x, y");
    assert_string_equal(tide_csv_field(c, 1), "say \"hi\"");
    assert_string_equal(tide_csv_field(c, 2), "two\nlines");
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_line(c), 4); /* the quoted newline counted */
    assert_string_equal(tide_csv_field(c, 0), "  padded  ");
    assert_string_equal(tide_csv_field(c, 1), "");
    assert_string_equal(tide_csv_field(c, 2), "plain");
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_line(c), 5);
    assert_string_equal(tide_csv_field(c, 2), "3");
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_open_error("", "t.csv:1: no header row");
    expect_open_error("# only a comment\n\n", "no header row");
    expect_open_error("a,,b\n", "t.csv:1: header: column 2 has no name");
    expect_open_error("a,b,A\n", "column 'A' appears twice");
    expect_open_error("\xEF\xBB" "a\n", "byte-order mark");

    expect_row_error("a,b\n1,2\n3\n", "t.csv:3: 1 field but the header has 2 columns");
    expect_row_error("a,b\n1,2,3\n", "t.csv:2: 3 fields but the header has 2 columns");
    expect_row_error("a,b\n1,\"open\n\n\n", "t.csv:5: unterminated quoted field (opened on line 2)");
    expect_row_error("a,b\n1,x\"y\n", "t.csv:2: '\"' inside unquoted field 2");
    expect_row_error("a,b\n1,\"x\"y\n", "t.csv:2: unexpected character after the closing quote");
    expect_row_error("a,b\n1,2\r3,4\n", "t.csv:2: carriage return not followed by a line feed");
    static const char nul[] = "a,b\n1,x\0y\n";
    tide_error_t err;
    tide_csv_t *c = tide_csv_open_mem(nul, sizeof nul - 1, "n.csv", &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_next(c, &err), -1);
    assert_string_equal(err.msg, "n.csv:2: NUL byte inside a field");
    /* final error: further calls fail too */
    assert_int_equal(tide_csv_recoverable(c), 0);
    assert_int_equal(tide_csv_next(c, &err), -1);
    tide_csv_close(c);
}

static void test_recoverable(void **state)
{
    (void)state;
    tide_error_t err;
    tide_csv_t *c = open_str("a,b\n1\n2,3\n", &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_next(c, &err), -1);
    assert_int_equal(tide_csv_recoverable(c), 1);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_recoverable(c), 0);
    assert_int_equal(tide_csv_line(c), 3);
    assert_string_equal(tide_csv_field(c, 1), "3");
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
}

static void test_limits(void **state)
{
    (void)state;
    tide_error_t err;
    /* a record just over the limit */
    size_t n = TIDE_CSV_MAX_RECORD + 10;
    char *big = malloc(n + 16);
    strcpy(big, "a\n");
    memset(big + 2, 'x', n);
    strcpy(big + 2 + n, "\n");
    tide_csv_t *c = tide_csv_open_mem(big, strlen(big), "big.csv", &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_next(c, &err), -1);
    assert_non_null(strstr(err.msg, "big.csv:2: record longer than 65536 bytes"));
    tide_csv_close(c);
    /* a long comment is fine */
    big[0] = '#';
    big[1] = 'x';
    memcpy(big + 2 + n, "\na\n1\n", 6);
    c = tide_csv_open_mem(big, strlen(big), "big.csv", &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_line(c), 2);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_string_equal(tide_csv_field(c, 0), "1");
    tide_csv_close(c);
    free(big);

    /* too many fields */
    char *wide = malloc(4 * (TIDE_CSV_MAX_FIELDS + 2));
    size_t k = 0;
    for (int i = 0; i <= TIDE_CSV_MAX_FIELDS; i++)
        k += (size_t)sprintf(wide + k, "%sc", i ? "," : "");
    c = tide_csv_open_mem(wide, k, "wide.csv", &err);
    assert_null(c);
    assert_non_null(strstr(err.msg, "wide.csv:1: more than 256 fields"));
    free(wide);
}

static void test_no_header(void **state)
{
    (void)state;
    tide_error_t err;
    const char *in = "0,1.5\n600,2,x\n";
    tide_csv_t *c = tide_csv_open_mem_ex(in, strlen(in), NULL, TIDE_CSV_NO_HEADER, &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_ncols(c), 0);
    assert_int_equal(tide_csv_col(c, "0"), -1);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_nfields(c), 2);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_nfields(c), 3);
    assert_string_equal(tide_csv_field(c, 2), "x");
    assert_int_equal(tide_csv_fail(c, &err, 0, TIDE_EINVAL, "bad %d", 7), -1);
    assert_string_equal(err.msg, "<memory>:2: bad 7");
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
}

static void test_fail_message(void **state)
{
    (void)state;
    tide_error_t err;
    tide_csv_t *c = open_str("id,gpus\nj1,x\n", &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_int_equal(tide_csv_fail(c, &err, 1, TIDE_EINVAL, "expected %s", "a number"), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_string_equal(err.msg, "t.csv:2: column 'gpus': expected a number");
    tide_csv_close(c);
}

static void test_file_and_writer(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide_csv_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/w.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const char *hdr[] = {"name", "note"};
    assert_int_equal(tide_csv_write_row(f, hdr, 2), 0);
    const char *row1[] = {"a,b", "say \"x\""};
    assert_int_equal(tide_csv_write_row(f, row1, 2), 0);
    const char *row2[] = {"#hash", " lead"};
    assert_int_equal(tide_csv_write_row(f, row2, 2), 0);
    const char *row3[] = {"multi\nline", NULL};
    assert_int_equal(tide_csv_write_row(f, row3, 2), 0);
    /* many rows to cross the reader's chunk boundary */
    for (int i = 0; i < 20000; i++)
        fprintf(f, "r%d,\"q\"\"%d\"\r\n", i, i);
    fclose(f);

    tide_error_t err;
    tide_csv_t *c = tide_csv_open_file(path, &err);
    assert_non_null(c);
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_string_equal(tide_csv_field(c, 0), "a,b");
    assert_string_equal(tide_csv_field(c, 1), "say \"x\"");
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_string_equal(tide_csv_field(c, 0), "#hash");
    assert_string_equal(tide_csv_field(c, 1), " lead");
    assert_int_equal(tide_csv_next(c, &err), 1);
    assert_string_equal(tide_csv_field(c, 0), "multi\nline");
    assert_string_equal(tide_csv_field(c, 1), "");
    for (int i = 0; i < 20000; i++) {
        char a[32], b[32];
        assert_int_equal(tide_csv_next(c, &err), 1);
        snprintf(a, sizeof a, "r%d", i);
        snprintf(b, sizeof b, "q\"%d", i);
        assert_string_equal(tide_csv_field(c, 0), a);
        assert_string_equal(tide_csv_field(c, 1), b);
        assert_int_equal(tide_csv_line(c), 6 + i);
    }
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
    unlink(path);

    assert_null(tide_csv_open_file(path, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "w.csv: cannot open"));
    /* a directory opens but cannot be read */
    assert_null(tide_csv_open_file(dir, &err));
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "read error"));
    rmdir(dir);
}

/* Unquoted fields are copied in runs up to the next stop byte: the record
 * limit falls on the same byte (a field of MAX - 2 bytes fits with its NUL,
 * one more does not), and from a file the runs stop at each chunk's end
 * (rows straddle the 64 KiB reads) and give every field, blanks trimmed. */
static void test_plain_runs(void **state)
{
    (void)state;
    tide_error_t err;
    for (size_t extra = 0; extra < 2; extra++) {
        size_t n = TIDE_CSV_MAX_RECORD - 2 + extra;
        char *big = malloc(n + 8);
        memcpy(big, "a\n", 2);
        memset(big + 2, 'x', n);
        memcpy(big + 2 + n, "\n", 2);
        tide_csv_t *c = tide_csv_open_mem(big, n + 3, "edge.csv", &err);
        assert_non_null(c);
        assert_int_equal(tide_csv_next(c, &err), extra ? -1 : 1);
        if (!extra)
            assert_int_equal(strlen(tide_csv_field(c, 0)), n);
        tide_csv_close(c);
        free(big);
    }
    char path[] = "/tmp/test_csv_runs.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("id,v,w\n", f);
    for (int i = 0; i < 20000; i++)
        fprintf(f, "r%d,  value %d  ,%d\n", i, i * 7, i % 13);
    fclose(f);
    tide_csv_t *c = tide_csv_open_file(path, &err);
    assert_non_null(c);
    for (int i = 0; i < 20000; i++) {
        char want[3][32];
        snprintf(want[0], sizeof want[0], "r%d", i);
        snprintf(want[1], sizeof want[1], "value %d", i * 7);
        snprintf(want[2], sizeof want[2], "%d", i % 13);
        assert_int_equal(tide_csv_next(c, &err), 1);
        for (int k = 0; k < 3; k++)
            assert_string_equal(tide_csv_field(c, k), want[k]);
    }
    assert_int_equal(tide_csv_next(c, &err), 0);
    tide_csv_close(c);
    unlink(path);
}

/* Close two memory streams and expect the same bytes in both. */
static void same_streams(FILE *fa, char **a, size_t *na, FILE *fb, char **b, size_t *nb)
{
    fclose(fa);
    fclose(fb);
    assert_int_equal(*na, *nb);
    assert_memory_equal(*a, *b, *na);
    free(*a);
    free(*b);
}

/* The row writer (one buffer, one fwrite) writes what the field writer
 * writes field by field, for short rows and for rows longer than its
 * buffer; the row builder's numbers are printf's. */
static void test_row_matches_fields(void **state)
{
    (void)state;
    static char big[9000];
    memset(big, '"', sizeof big - 1); /* doubled when quoted: past any buffer */
    const char *cases[][4] = {
        {"a", "b,c", NULL, ""},   {"#x", " y", "z ", "q\"r"}, {"1", "2", "3", "4"},
        {"multi\nline", "cr\rx", "-", "plain"}, {big, "after", big + 8000, "end"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
        assert_int_equal(tide_csv_write_row(fa, cases[k], 4), 0);
        for (int i = 0; i < 4; i++) {
            if (i)
                fputc(',', fb);
            assert_int_equal(tide_csv_write_field(fb, cases[k][i]), 0);
        }
        fputc('\n', fb);
        same_streams(fa, &a, &na, fb, &b, &nb);
    }
    /* numbers as printf writes them, empty fields, a row past the inline
     * buffer (moved to the heap) */
    char *a = NULL;
    size_t na = 0;
    FILE *fa = open_memstream(&a, &na);
    tide_csv_row_t r;
    tide_csv_row_begin(&r);
    tide_csv_row_i64(&r, -9223372036854775807LL - 1);
    tide_csv_row_fixed(&r, 2.675, 2);
    tide_csv_row_fixed(&r, -0.001, 2);
    tide_csv_row_fixed(&r, 1e300, 1);
    tide_csv_row_str(&r, NULL);
    tide_csv_row_str(&r, "x y");
    assert_int_equal(tide_csv_row_end(&r, fa), 0);
    tide_csv_row_str(&r, big + 100); /* 8899 quotes */
    tide_csv_row_i64(&r, 7);
    assert_int_equal(tide_csv_row_end(&r, fa), 0);
    fclose(fa);
    char want[400];
    int n = snprintf(want, sizeof want, "%lld,%.2f,%.2f,%.1f,,x y\n", -9223372036854775807LL - 1,
                     2.675, -0.001, 1e300);
    assert_true(na == (size_t)n + 2 * 8899 + 2 + 3);
    assert_memory_equal(a, want, (size_t)n);
    assert_int_equal(a[n], '"');
    assert_memory_equal(a + na - 4, "\",7\n", 4);
    free(a);
}

/* Raw text (fields kept from an earlier row) goes in as those fields: a
 * row of str fields, its text taken and written again raw, first, in the
 * middle and past the inline buffer, gives the same bytes. */
static void test_row_raw(void **state)
{
    (void)state;
    static char big[3000];
    memset(big, 'x', sizeof big - 1);
    const char *f[] = {"a,b", "plain", " edge", big};
    for (size_t k = 0; k < 4; k++) {
        char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
        tide_csv_row_t kept, r;
        tide_csv_row_begin(&kept);
        tide_csv_row_str(&kept, f[k]);
        tide_csv_row_str(&kept, "q\"r");
        tide_csv_row_begin(&r);
        tide_csv_row_raw(&r, kept.p, kept.len); /* first */
        tide_csv_row_i64(&r, 1);
        tide_csv_row_raw(&r, kept.p, kept.len); /* after a field */
        assert_int_equal(tide_csv_row_end(&r, fa), 0);
        if (kept.p != kept.inl) /* a long row's heap copy */
            free(kept.p);
        const char *row[] = {f[k], "q\"r", "1", f[k], "q\"r"};
        assert_int_equal(tide_csv_write_row(fb, row, 5), 0);
        same_streams(fa, &a, &na, fb, &b, &nb);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),      cmocka_unit_test(test_quoting_and_crlf),
        cmocka_unit_test(test_errors),     cmocka_unit_test(test_recoverable),
        cmocka_unit_test(test_limits),     cmocka_unit_test(test_no_header),
        cmocka_unit_test(test_fail_message), cmocka_unit_test(test_file_and_writer),
        cmocka_unit_test(test_row_matches_fields), cmocka_unit_test(test_row_raw),
        cmocka_unit_test(test_plain_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
