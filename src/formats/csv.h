/* A small CSV reader (from memory or a file) and writer helpers.
 *
 * Reading: RFC 4180 fields ("a ""quoted"" field", newlines inside quotes),
 * LF or CRLF line ends, a UTF-8 byte-order mark at the start is ignored,
 * lines starting with '#' are comments, blank (or all-space) lines are
 * skipped, spaces and tabs around a field are trimmed (inside quotes they are
 * kept). By default the first row is a header naming the columns and every
 * later row must have exactly as many fields. Errors name the input and the
 * line: "jobs.csv:12: unterminated quoted field (opened on line 11)". */
#ifndef TIDE_SIM_CSV_H
#define TIDE_SIM_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "tide/types.h"

#define TIDE_CSV_MAX_RECORD (64 * 1024) /* bytes of one record (fields + separators) */
#define TIDE_CSV_MAX_FIELDS 256         /* fields in one record */

typedef struct tide_csv tide_csv_t;

/* Open flags. */
enum {
    TIDE_CSV_NO_HEADER = 1, /* no header row: tide_csv_col is always -1 and the
                               field count may vary from row to row */
};

/* Read CSV from buf[0..len) (need not be NUL-terminated; borrowed: it must
 * stay valid until tide_csv_close). `name` (copied; NULL = "<memory>") is used
 * in error messages. Reads the header row. Returns a reader the caller owns,
 * or NULL with err (EINVAL: no header row, empty or duplicate column name,
 * malformed header line). */
tide_csv_t *tide_csv_open_mem(const char *buf, size_t len, const char *name, tide_error_t *err);

/* Same for a file (read in chunks; the path is the name in messages).
 * Errors: ENOENT if the file does not exist, EIO if it cannot be read, else
 * as tide_csv_open_mem. */
tide_csv_t *tide_csv_open_file(const char *path, tide_error_t *err);

/* Both with flags (TIDE_CSV_NO_HEADER). */
tide_csv_t *tide_csv_open_mem_ex(const char *buf, size_t len, const char *name, int flags,
                                 tide_error_t *err);
tide_csv_t *tide_csv_open_file_ex(const char *path, int flags, tide_error_t *err);

/* Close the reader (and its file). NULL is a no-op. */
void tide_csv_close(tide_csv_t *c);

/* Advance to the next data row. Returns 1 (a row is current), 0 (end of input)
 * or -1 with err ("name:line: problem"): record too long, too many fields,
 * unterminated quote, stray quote or carriage return, NUL byte, read error,
 * or (with a header) a field count different from the header's. A wrong field
 * count is recoverable (tide_csv_recoverable() is 1 and the next call goes on
 * with the following row); every other error is final. */
int tide_csv_next(tide_csv_t *c, tide_error_t *err);

/* 1 if the last -1 from tide_csv_next only concerned that row. */
int tide_csv_recoverable(const tide_csv_t *c);

/* Column index of header name (ASCII case-insensitive), or -1 if absent. */
int tide_csv_col(const tide_csv_t *c, const char *name);

/* Number of header columns (0 without a header) and the name of column i
 * (borrowed, NULL if out of range). */
int tide_csv_ncols(const tide_csv_t *c);
const char *tide_csv_colname(const tide_csv_t *c, int col);

/* Fields of the current row: count, and field col (borrowed, valid until the
 * next tide_csv_next; NULL if col is out of range, e.g. -1 for an absent
 * column). Fields are NUL-terminated, trimmed, with quotes removed. */
int tide_csv_nfields(const tide_csv_t *c);
const char *tide_csv_field(const tide_csv_t *c, int col);

/* Line number (1-based) where the current row (or the header) starts. */
int tide_csv_line(const tide_csv_t *c);

/* The input's name as given at open (borrowed). */
const char *tide_csv_name(const tide_csv_t *c);

/* Fill err with "name:line: column 'x': <message>" for the current row
 * (without the column part when col < 0 or has no name). Returns -1. */
int tide_csv_fail(const tide_csv_t *c, tide_error_t *err, int col, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Writer helpers. tide_csv_write_field writes s (NULL = empty) to f, quoted
 * when it contains ',', '"', CR, LF, starts with '#' or has spaces at either
 * end. tide_csv_write_row writes n fields separated by ',' and a '\n'.
 * Return 0, or -1 on a write error (errno set by stdio). */
int tide_csv_write_field(FILE *f, const char *s);
int tide_csv_write_row(FILE *f, const char *const *fields, int n);

/* A row built in memory and written with one fwrite: fields are appended
 * (tide_csv_row_str quotes as tide_csv_write_field does; numbers are written
 * as printf's %lld and %.*f write them, without printf), tide_csv_row_end
 * adds the '\n' and writes. Rows of any length (a long one moves to the
 * heap, freed by tide_csv_row_end). A row must not be copied while in use
 * (p may point into inl). */
typedef struct tide_csv_row {
    char *p;          /* inl or a heap copy */
    size_t len, cap;
    int n;            /* fields so far */
    char inl[1024];
} tide_csv_row_t;

void tide_csv_row_begin(tide_csv_row_t *r);
void tide_csv_row_str(tide_csv_row_t *r, const char *s); /* NULL = empty field */
void tide_csv_row_i64(tide_csv_row_t *r, long long v);
void tide_csv_row_fixed(tide_csv_row_t *r, double x, int dec); /* dec 0..6 */
/* Append n bytes that already are one or more fields in CSV form (quoted
 * where needed, joined by ','), e.g. the text of an earlier row's fields
 * kept to be written again: a ',' before them unless they come first. */
void tide_csv_row_raw(tide_csv_row_t *r, const char *s, size_t n);
/* Write the row and '\n' to f; r is empty again (ready for the next row).
 * Returns 0 or -1 on a write error. */
int tide_csv_row_end(tide_csv_row_t *r, FILE *f);

#endif
