/* CSV reader: a byte source (memory or buffered file), a record parser that
 * stores the fields NUL-separated in one buffer, and a header map. */
#include "formats/csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

#define FILE_CHUNK 65536

struct tide_csv {
    char *name;
    int flags;
    /* byte source */
    const char *buf;
    size_t len, pos;
    FILE *fp;
    char *fbuf;
    int ioerr;
    /* position */
    int cur_line; /* line of the next byte */
    int line;     /* line where the current record starts */
    /* current record */
    char *row;
    size_t rowlen, rowcap;
    size_t *offs;
    size_t nf, fcap;
    /* header */
    char **hdr;
    int nhdr;
    /* state */
    int failed;      /* a final error happened */
    int recoverable; /* the last error was only about that row */
};

/* ------------------------------------------------------------ byte source */

static int rd(tide_csv_t *c)
{
    if (c->pos < c->len)
        return (unsigned char)c->buf[c->pos++];
    if (!c->fp)
        return EOF;
    size_t n = fread(c->fbuf, 1, FILE_CHUNK, c->fp);
    if (n == 0) {
        if (ferror(c->fp))
            c->ioerr = errno ? errno : EIO;
        return EOF;
    }
    c->buf = c->fbuf;
    c->len = n;
    c->pos = 1;
    return (unsigned char)c->buf[0];
}

/* Put back the byte just returned by rd (never EOF). */
static void unrd(tide_csv_t *c)
{
    c->pos--;
}

/* ------------------------------------------------------------------ errors */

static int fail_at(tide_csv_t *c, tide_error_t *err, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(tide_csv_t *c, tide_error_t *err, int line, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->failed = 1;
    c->recoverable = 0;
    return tide_errf(err, c->ioerr ? TIDE_EIO : TIDE_EINVAL, "%s:%d: %s", c->name, line, msg);
}

int tide_csv_fail(const tide_csv_t *c, tide_error_t *err, int col, int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!c)
        return tide_errf(err, code, "%s", msg);
    const char *cn = tide_csv_colname(c, col);
    if (cn)
        return tide_errf(err, code, "%s:%d: column '%s': %s", c->name, c->line, cn, msg);
    return tide_errf(err, code, "%s:%d: %s", c->name, c->line, msg);
}

/* ------------------------------------------------------------------ parser */

static int put(tide_csv_t *c, tide_error_t *err, int ch)
{
    if (c->rowlen + 1 >= TIDE_CSV_MAX_RECORD)
        return fail_at(c, err, c->line, "record longer than %d bytes", TIDE_CSV_MAX_RECORD);
    if (c->rowlen + 2 > c->rowcap)
        tide_grow((void **)&c->row, &c->rowcap, c->rowlen + 2, 1);
    c->row[c->rowlen++] = (char)ch;
    return 0;
}

/* Bytes that end a plain run: NUL and those that need quotes (the writer's
 * plain copy), which are also those the reader's unquoted field stops at or
 * rejects. */
static const unsigned char stop_byte[256] = {[0] = 1, [','] = 1, ['"'] = 1, ['\r'] = 1,
                                             ['\n'] = 1};

/* Copy the bytes that follow in the buffer up to the next stop byte into
 * the row in one go: what put would do one rd at a time for an unquoted
 * field, never past the record limit (the next put reports that, as
 * before). */
static void put_plain_run(tide_csv_t *c)
{
    if (c->rowlen + 1 >= TIDE_CSV_MAX_RECORD)
        return;
    size_t room = TIDE_CSV_MAX_RECORD - 1 - c->rowlen, avail = c->len - c->pos, n = 0;
    const char *b = c->buf + c->pos;
    if (avail > room)
        avail = room;
    while (n < avail && !stop_byte[(unsigned char)b[n]])
        n++;
    if (!n)
        return;
    if (c->rowlen + n + 2 > c->rowcap)
        tide_grow((void **)&c->row, &c->rowcap, c->rowlen + n + 2, 1);
    memcpy(c->row + c->rowlen, b, n);
    c->rowlen += n;
    c->pos += n;
}

static int is_blank(int ch)
{
    return ch == ' ' || ch == '\t';
}

/* After a '\r': accept "\r\n" as a line end. */
static int expect_lf(tide_csv_t *c, tide_error_t *err)
{
    int ch = rd(c);
    if (ch == '\n')
        return 0;
    if (ch != EOF)
        unrd(c);
    return fail_at(c, err, c->cur_line, "carriage return not followed by a line feed");
}

/* Skip the rest of a comment line. */
static void skip_line(tide_csv_t *c)
{
    int ch;
    while ((ch = rd(c)) != EOF && ch != '\n')
        ;
    c->cur_line++;
}

/* Read one field into the row buffer; *term gets the terminator (',', '\n'
 * or EOF), *quoted whether it was quoted. */
static int read_field(tide_csv_t *c, tide_error_t *err, int *term, int *quoted)
{
    size_t start = c->rowlen;
    int ch;
    *quoted = 0;
    do
        ch = rd(c);
    while (is_blank(ch));

    if (ch == '"') {
        *quoted = 1;
        int qline = c->cur_line;
        for (;;) {
            ch = rd(c);
            if (ch == EOF) {
                if (c->ioerr)
                    return 0; /* reported by the caller */
                return fail_at(c, err, c->cur_line,
                               "unterminated quoted field (opened on line %d)", qline);
            }
            if (ch == '"') {
                int ch2 = rd(c);
                if (ch2 == '"') {
                    if (put(c, err, '"') < 0)
                        return -1;
                    continue;
                }
                if (ch2 != EOF)
                    unrd(c);
                break;
            }
            if (ch == 0)
                return fail_at(c, err, c->cur_line, "NUL byte inside a field");
            if (ch == '\r') {
                int ch2 = rd(c);
                if (ch2 != '\n') {
                    if (ch2 != EOF)
                        unrd(c);
                    return fail_at(c, err, c->cur_line,
                                   "carriage return not followed by a line feed");
                }
                ch = '\n';
            }
            if (ch == '\n')
                c->cur_line++;
            if (put(c, err, ch) < 0)
                return -1;
        }
        do
            ch = rd(c);
        while (is_blank(ch));
        if (ch != ',' && ch != '\n' && ch != '\r' && ch != EOF)
            return fail_at(c, err, c->cur_line,
                           "unexpected character after the closing quote of field %zu "
                           "(a '\"' inside a quoted field is written \"\")",
                           c->nf + 1);
    } else {
        while (ch != ',' && ch != '\n' && ch != '\r' && ch != EOF) {
            if (ch == '"')
                return fail_at(c, err, c->cur_line,
                               "'\"' inside unquoted field %zu (quote the whole field and "
                               "double the quote: \"a \"\"b\"\"\")",
                               c->nf + 1);
            if (ch == 0)
                return fail_at(c, err, c->cur_line, "NUL byte inside a field");
            if (put(c, err, ch) < 0)
                return -1;
            put_plain_run(c);
            ch = rd(c);
        }
        while (c->rowlen > start && is_blank(c->row[c->rowlen - 1]))
            c->rowlen--;
    }
    if (ch == '\r') {
        if (expect_lf(c, err) < 0)
            return -1;
        ch = '\n';
    }
    if (ch == '\n')
        c->cur_line++;
    *term = ch;
    if (put(c, err, 0) < 0)
        return -1;
    return 0;
}

/* Read the next record. Returns 1, 0 at end of input, -1 on error. */
static int read_record(tide_csv_t *c, tide_error_t *err)
{
    for (;;) {
        c->line = c->cur_line;
        c->rowlen = 0;
        c->nf = 0;
        int ch = rd(c);
        if (ch == EOF)
            break;
        if (ch == '#') {
            skip_line(c);
            continue;
        }
        unrd(c);
        int term = ',', quoted = 0, all_quoted = 1;
        while (term == ',') {
            if (c->nf >= TIDE_CSV_MAX_FIELDS)
                return fail_at(c, err, c->line, "more than %d fields in one record",
                               TIDE_CSV_MAX_FIELDS);
            size_t off = c->rowlen;
            if (read_field(c, err, &term, &quoted) < 0)
                return -1;
            if (c->ioerr)
                break;
            TIDE_PUSH(c->offs, c->nf, c->fcap, off);
            all_quoted &= quoted;
        }
        if (c->ioerr)
            break;
        /* a blank or all-space line is one empty unquoted field: skip it */
        if (c->nf == 1 && !all_quoted && c->row[c->offs[0]] == 0)
            continue;
        return 1;
    }
    if (c->ioerr)
        return fail_at(c, err, c->cur_line, "read error: %s", strerror(c->ioerr));
    return 0;
}

/* ------------------------------------------------------------------ open */

static tide_csv_t *csv_new(const char *name, int flags)
{
    tide_csv_t *c = tide_xcalloc(1, sizeof *c);
    c->name = tide_xstrdup(name ? name : "<memory>");
    c->flags = flags;
    c->cur_line = 1;
    c->line = 1;
    return c;
}

static tide_csv_t *csv_start(tide_csv_t *c, tide_error_t *err)
{
    /* UTF-8 byte-order mark */
    int b0 = rd(c);
    if (b0 == 0xEF) {
        int b1 = rd(c);
        int b2 = b1 == 0xBB ? rd(c) : EOF;
        if (b1 != 0xBB || b2 != 0xBF) {
            fail_at(c, err, 1, "invalid byte sequence at the start (broken byte-order mark?)");
            goto bad;
        }
    } else if (b0 != EOF) {
        unrd(c);
    }
    if (c->flags & TIDE_CSV_NO_HEADER)
        return c;

    int r = read_record(c, err);
    if (r < 0)
        goto bad;
    if (r == 0) {
        fail_at(c, err, c->line, "no header row (the input is empty)");
        goto bad;
    }
    c->nhdr = (int)c->nf;
    c->hdr = tide_xcalloc(c->nf, sizeof *c->hdr);
    for (size_t i = 0; i < c->nf; i++) {
        const char *h = c->row + c->offs[i];
        if (!*h) {
            fail_at(c, err, c->line, "header: column %zu has no name", i + 1);
            goto bad;
        }
        for (size_t j = 0; j < i; j++)
            if (strcasecmp(c->hdr[j], h) == 0) {
                fail_at(c, err, c->line, "header: column '%.100s' appears twice", h);
                goto bad;
            }
        c->hdr[i] = tide_xstrdup(h);
    }
    c->nf = 0;
    return c;
bad:
    tide_csv_close(c);
    return NULL;
}

tide_csv_t *tide_csv_open_mem_ex(const char *buf, size_t len, const char *name, int flags,
                                 tide_error_t *err)
{
    tide_csv_t *c = csv_new(name, flags);
    c->buf = buf ? buf : "";
    c->len = buf ? len : 0;
    return csv_start(c, err);
}

tide_csv_t *tide_csv_open_mem(const char *buf, size_t len, const char *name, tide_error_t *err)
{
    return tide_csv_open_mem_ex(buf, len, name, 0, err);
}

tide_csv_t *tide_csv_open_file_ex(const char *path, int flags, tide_error_t *err)
{
    if (!path) {
        tide_errf(err, TIDE_EINVAL, "no CSV file name given");
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        int e = errno;
        tide_errf(err, e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: cannot open: %s", path,
                  strerror(e));
        return NULL;
    }
    tide_csv_t *c = csv_new(path, flags);
    c->fp = fp;
    c->fbuf = tide_xmalloc(FILE_CHUNK);
    c->buf = c->fbuf;
    c->len = 0;
    return csv_start(c, err);
}

tide_csv_t *tide_csv_open_file(const char *path, tide_error_t *err)
{
    return tide_csv_open_file_ex(path, 0, err);
}

void tide_csv_close(tide_csv_t *c)
{
    if (!c)
        return;
    if (c->fp)
        fclose(c->fp);
    for (int i = 0; i < c->nhdr; i++)
        free(c->hdr[i]);
    free(c->hdr);
    free(c->fbuf);
    free(c->row);
    free(c->offs);
    free(c->name);
    free(c);
}

/* ------------------------------------------------------------------ rows */

int tide_csv_next(tide_csv_t *c, tide_error_t *err)
{
    if (!c)
        return tide_errf(err, TIDE_EINVAL, "no CSV reader");
    if (c->failed)
        return tide_errf(err, TIDE_ESTATE, "%s:%d: reading stopped at an earlier error",
                         c->name, c->cur_line);
    c->recoverable = 0;
    int r = read_record(c, err);
    if (r < 0) {
        c->nf = 0;
        return -1;
    }
    if (r == 0) {
        c->nf = 0;
        return 0;
    }
    if (!(c->flags & TIDE_CSV_NO_HEADER) && (int)c->nf != c->nhdr) {
        tide_errf(err, TIDE_EINVAL, "%s:%d: %zu field%s but the header has %d columns", c->name,
                  c->line, c->nf, c->nf == 1 ? "" : "s", c->nhdr);
        c->nf = 0;
        c->recoverable = 1;
        return -1;
    }
    return 1;
}

int tide_csv_recoverable(const tide_csv_t *c)
{
    return c && c->recoverable;
}

int tide_csv_col(const tide_csv_t *c, const char *name)
{
    if (!c || !name)
        return -1;
    for (int i = 0; i < c->nhdr; i++)
        if (strcasecmp(c->hdr[i], name) == 0)
            return i;
    return -1;
}

int tide_csv_ncols(const tide_csv_t *c)
{
    return c ? c->nhdr : 0;
}

const char *tide_csv_colname(const tide_csv_t *c, int col)
{
    if (!c || col < 0 || col >= c->nhdr)
        return NULL;
    return c->hdr[col];
}

int tide_csv_nfields(const tide_csv_t *c)
{
    return c ? (int)c->nf : 0;
}

const char *tide_csv_field(const tide_csv_t *c, int col)
{
    if (!c || col < 0 || (size_t)col >= c->nf)
        return NULL;
    return c->row + c->offs[col];
}

int tide_csv_line(const tide_csv_t *c)
{
    return c ? c->line : 0;
}

const char *tide_csv_name(const tide_csv_t *c)
{
    return c ? c->name : "";
}

/* ---------------------------------------------------------------- writer */

/* Do the edges of the n bytes at s need quotes (a leading '#', blanks at
 * either end)? */
static int edges_need_quotes(const char *s, size_t n)
{
    return n > 0 && (s[0] == '#' || is_blank(s[0]) || is_blank(s[n - 1]));
}

/* Does s need quotes? *len gets its length. */
static int needs_quotes(const char *s, size_t *len)
{
    size_t n = 0;
    int q = 0;
    for (const char *p = s; *p; p++, n++)
        q |= *p == ',' || *p == '"' || *p == '\r' || *p == '\n';
    q |= edges_need_quotes(s, n);
    *len = n;
    return q;
}

int tide_csv_write_field(FILE *f, const char *s)
{
    if (!s)
        s = "";
    size_t n;
    if (!needs_quotes(s, &n))
        return fwrite(s, 1, n, f) == n ? 0 : -1;
    if (putc('"', f) == EOF)
        return -1;
    for (; *s; s++) {
        if (*s == '"' && putc('"', f) == EOF)
            return -1;
        if (putc(*s, f) == EOF)
            return -1;
    }
    return putc('"', f) == EOF ? -1 : 0;
}

/* ------------------------------------------------------------ row builder */

void tide_csv_row_begin(tide_csv_row_t *r)
{
    r->p = r->inl;
    r->cap = sizeof r->inl;
    r->len = 0;
    r->n = 0;
}

/* Room for `more` bytes after len. */
static void row_room(tide_csv_row_t *r, size_t more)
{
    if (r->len + more <= r->cap)
        return;
    size_t cap = r->cap * 2 > r->len + more ? r->cap * 2 : r->len + more;
    if (r->p == r->inl) {
        r->p = tide_xmalloc(cap);
        memcpy(r->p, r->inl, r->len);
    } else {
        r->p = tide_xrealloc(r->p, cap);
    }
    r->cap = cap;
}

/* The ',' before every field but the first. */
static void row_sep(tide_csv_row_t *r, size_t more)
{
    row_room(r, more + 1);
    if (r->n++)
        r->p[r->len++] = ',';
}

void tide_csv_row_str(tide_csv_row_t *r, const char *s)
{
    row_sep(r, 32);
    if (!s)
        return;
    /* copy until a byte that ends a plain field; most fields end at NUL */
    size_t start = r->len;
    const char *q = s;
    for (;;) {
        char *d = r->p + r->len, *end = r->p + r->cap;
        while (d < end && !stop_byte[(unsigned char)*q])
            *d++ = *q++;
        r->len = (size_t)(d - r->p);
        if (d < end)
            break;
        row_room(r, 32);
    }
    if (!*q && !edges_need_quotes(r->p + start, r->len - start))
        return;
    /* quoted: every '"' doubled */
    r->len = start;
    row_room(r, 2 * strlen(s) + 2);
    r->p[r->len++] = '"';
    for (; *s; s++) {
        if (*s == '"')
            r->p[r->len++] = '"';
        r->p[r->len++] = *s;
    }
    r->p[r->len++] = '"';
}

void tide_csv_row_i64(tide_csv_row_t *r, long long v)
{
    row_sep(r, 24);
    r->len += (size_t)tide_fmt_i64(r->p + r->len, v);
}

void tide_csv_row_fixed(tide_csv_row_t *r, double x, int dec)
{
    /* %.*f of the largest doubles: 309 digits, a sign, a point, dec decimals */
    enum { MAXF = 330 };
    row_sep(r, MAXF);
    int n = tide_fmt_fixed(r->p + r->len, MAXF, x, dec);
    r->len += n > 0 ? (size_t)n : 0;
}

void tide_csv_row_raw(tide_csv_row_t *r, const char *s, size_t n)
{
    row_sep(r, n);
    memcpy(r->p + r->len, s, n);
    r->len += n;
}

int tide_csv_row_end(tide_csv_row_t *r, FILE *f)
{
    row_room(r, 1);
    r->p[r->len++] = '\n';
    int rc = fwrite(r->p, 1, r->len, f) == r->len ? 0 : -1;
    if (r->p != r->inl)
        free(r->p);
    tide_csv_row_begin(r);
    return rc;
}

int tide_csv_write_row(FILE *f, const char *const *fields, int n)
{
    tide_csv_row_t r;
    tide_csv_row_begin(&r);
    for (int i = 0; i < n; i++)
        tide_csv_row_str(&r, fields[i]);
    return tide_csv_row_end(&r, f);
}
