/* perfcmp.readers._eventscan: a chunk of Kineto trace events straight into columns.
 *
 * The optional fast path of readers/torch_trace.py. The pure-Python path (a typed msgspec decode of
 * the chunk, then one Python object per event turned into columns) stays the reference and the
 * fallback: this scanner reads a chunk only when it can give exactly what that path gives, and
 * otherwise answers None ("not scanned"), for the chunk to go the Python way. It never decides an
 * outcome the Python path would not: malformed JSON, a value of the wrong type, invalid UTF-8, a
 * number it does not read exactly, a duplicated or escaped key: each is "not scanned", and the
 * msgspec decode then accepts, repairs or refuses the chunk as it always has.
 *
 * What it writes, per role (host, device, memory, flow, fwdbwd): int32 codes of text columns into
 * the reader's dictionaries (each distinct raw value is handed once to a Python callback, which
 * decodes it with msgspec and looks it up; later equal raw values cost a hash lookup here), int64
 * nanosecond timestamps (the same arithmetic as columns.times_ns), float64 durations and sizes,
 * int64 ids. No Python object is made per event, except a flow's id.
 *
 * Which keys an event and its args have, and of what kind, comes from the Python side (the msgspec
 * structs' own fields), so that every field the decode would check is checked here too.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------
 * Kinds of values a field accepts (as the msgspec types of chrome.Event / chrome.Args).
 */
enum { K_STR = 0,   /* str: a string */
       K_STRN = 1,  /* str | None */
       K_NUM = 2,   /* int | float | str | None (a number, text or null; an event's name too) */
       K_RAW = 3,   /* msgspec.Raw: any JSON value */
       K_ARGS = 4   /* the args struct, or null */
};

/* The event fields the columns use, in the order the Python side lists them first. */
enum { E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ID, E_ARGS, E_USED };
/* The args fields the columns use, likewise. */
enum { A_CORRELATION, A_STREAM, A_DIMS, A_TYPES, A_STACK, A_ALLOCATED, A_RESERVED, A_DEVICE_ID, A_ADDR,
       A_BYTES, A_PG_NAME, A_PG_DESC, A_NELEMS, A_DTYPE, A_USED };

/* What kineto_scan expects of this module (its fields' order, callbacks, outputs): a module built
 * from older source, left in place by an editable install, is then not used. */
#define INTERFACE 1

#define MAX_FIELDS 64
#define MAX_DEPTH 64            /* deeper nesting: not scanned (no trace nests more than a few levels) */
#define NUMBER_CHARS 40         /* a longer number literal: not scanned */

typedef struct { const unsigned char *p; Py_ssize_t n; } Span;  /* a raw value; n == 0: absent */

typedef struct {
    int count;
    Py_ssize_t len[MAX_FIELDS];
    const char *key[MAX_FIELDS];
    int kind[MAX_FIELDS];
    PyObject *keys;  /* the bytes objects behind key[] */
} Fields;

/* ------------------------------------------------------------------------------------------------
 * Raw value -> code, each distinct raw value asked of a Python callback once.
 */
typedef struct { uint64_t hash; unsigned char *key; Py_ssize_t len; long long code; } Slot;

typedef struct {
    Slot *slots;
    size_t mask, used;
    PyObject *callback;  /* bytes -> int */
    Slot *last;          /* the slot found last: consecutive events mostly repeat a pid, a thread, a category */
} Table;

/* Whether two short byte strings are equal: word by word, without a call (libc's memcmp costs a
 * call per key, and most keys here are a few bytes). */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--)
        if (*a++ != *b++) return 0;
    return 1;
}

static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int table_init(Table *t, PyObject *callback) {
    t->mask = 255;
    t->used = 0;
    t->slots = PyMem_Calloc(t->mask + 1, sizeof(Slot));
    t->last = NULL;
    if (!t->slots) { PyErr_NoMemory(); return -1; }
    Py_INCREF(callback);
    t->callback = callback;
    return 0;
}

static void table_free(Table *t) {
    if (t->slots) {
        for (size_t i = 0; i <= t->mask; i++) PyMem_Free(t->slots[i].key);
        PyMem_Free(t->slots);
    }
    t->slots = NULL;
    Py_CLEAR(t->callback);
}

static int table_grow(Table *t) {
    size_t size = (t->mask + 1) * 2;
    Slot *slots = PyMem_Calloc(size, sizeof(Slot));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i <= t->mask; i++) {
        Slot *s = &t->slots[i];
        if (!s->key) continue;
        size_t j = s->hash & (size - 1);
        while (slots[j].key) j = (j + 1) & (size - 1);
        slots[j] = *s;
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    t->last = NULL;
    return 0;
}

/* The code of a raw value (``key`` may be a concatenation, see the process group). 0 found;
 * -1 a Python error (the callback refused the value, or no memory). */
static int table_code(Table *t, const unsigned char *key, Py_ssize_t len, long long *code) {
    Slot *last = t->last;
    if (last && last->len == len && same_bytes(last->key, key, len)) {
        *code = last->code;
        return 0;
    }
    uint64_t h = hash_bytes(key, len);
    size_t i = h & t->mask;
    for (;;) {
        Slot *s = &t->slots[i];
        if (!s->key) break;
        if (s->hash == h && s->len == len && same_bytes(s->key, key, len)) {
            *code = s->code;
            t->last = s;
            return 0;
        }
        i = (i + 1) & t->mask;
    }
    PyObject *arg = PyBytes_FromStringAndSize((const char *)key, len);
    if (!arg) return -1;
    PyObject *out = PyObject_CallOneArg(t->callback, arg);
    Py_DECREF(arg);
    if (!out) return -1;
    long long value = PyLong_AsLongLong(out);
    Py_DECREF(out);
    if (value == -1 && PyErr_Occurred()) return -1;
    unsigned char *copy = PyMem_Malloc(len ? (size_t)len : 1);
    if (!copy) { PyErr_NoMemory(); return -1; }
    memcpy(copy, key, (size_t)len);
    /* the callback may have run Python code, but nothing that touches this table */
    Slot *s = &t->slots[i];
    s->hash = h;
    s->key = copy;
    s->len = len;
    s->code = value;
    *code = value;
    t->last = s;
    if (++t->used * 2 > t->mask + 1) return table_grow(t);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Growable column buffers.
 */
typedef struct { char *data; Py_ssize_t len, cap; } Buf;

static int buf_put(Buf *b, const void *value, Py_ssize_t size) {
    if (b->len + size > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + size) cap *= 2;
        char *data = PyMem_Realloc(b->data, (size_t)cap);
        if (!data) { PyErr_NoMemory(); return -1; }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, value, (size_t)size);
    b->len += size;
    return 0;
}

static int put_i32(Buf *b, long long v) { int32_t x = (int32_t)v; return buf_put(b, &x, 4); }
static int put_i64(Buf *b, long long v) { int64_t x = (int64_t)v; return buf_put(b, &x, 8); }
static int put_f64(Buf *b, double v) { return buf_put(b, &v, 8); }
static int put_u8(Buf *b, int v) { unsigned char x = (unsigned char)v; return buf_put(b, &x, 1); }

/* The roles' columns, in the order scan() returns them (see torch_trace._SCANNED_COLUMNS). */
enum { H_PID, H_TID, H_NAME, H_CAT, H_SHAPES, H_TYPES, H_STACK, H_PG, H_TS, H_DUR, H_CORRELATION, H_COLS };
enum { D_PID, D_TID, D_NAME, D_TASK, D_TS, D_DUR, D_STREAM, D_CORRELATION, D_COLS };
enum { M_PID, M_TID, M_NAME, M_TS, M_DEVICE_ID, M_ADDR, M_BYTES, M_ALLOCATED, M_RESERVED, M_COLS };
enum { F_PID, F_TID, F_TS, F_PH, F_IS_F, F_COLS };
enum { R_HOST, R_DEVICE, R_MEMORY, R_FLOW, R_FWDBWD, ROLES };
static const int ROLE_COLS[ROLES] = {H_COLS, D_COLS, M_COLS, F_COLS, F_COLS};
#define MOST_COLS H_COLS

/* Text columns' tables. */
enum { T_NAME, T_PID, T_TID, T_XROLE, T_FLOWROLE, T_PH, T_SHAPES, T_TYPES, T_STACK, T_PG, TABLES };

typedef struct {
    PyObject_HEAD
    Fields event, args;
    Table tables[TABLES];
    int ready;
    /* one chunk's output */
    Buf cols[ROLES][MOST_COLS];
    Py_ssize_t rows[ROLES];
    PyObject *flow_ids[2];   /* flow and fwdbwd ids as written: int or None */
    PyObject *messages;      /* host rows with a collective's message: (row, nelems raw, dtype raw) */
    Py_ssize_t untimed;
} Scanner;

/* ------------------------------------------------------------------------------------------------
 * JSON scanning. Each function returns the position past what it read, or NULL: "not scanned"
 * (no Python error set), for anything it does not read exactly as the msgspec decode would.
 */
static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
/* The bytes of an 8-byte word (read little-endian) that end a plain run in a string: below 0x20,
 * at or above 0x80, '"' or '\\', each marked by its high bit. Borrows can mark a byte above a
 * marked one, never below: the lowest mark is always a real one. */
static inline uint64_t special_bytes(uint64_t w) {
    uint64_t below = (w - ONES * 0x20) & ~w;
    uint64_t quote = w ^ (ONES * '"'), slash = w ^ (ONES * '\\');
    uint64_t zero = ((quote - ONES) & ~quote) | ((slash - ONES) & ~slash);
    return (below | zero | w) & HIGHS;
}

static inline int hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned hex4(const unsigned char *p) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* A string from its opening quote; *escaped tells whether it has a backslash. Strict: control
 * characters, invalid escapes, lone surrogates and invalid UTF-8 are not scanned. */
static const unsigned char *scan_string(const unsigned char *p, const unsigned char *end, int *escaped) {
    p++;
    *escaped = 0;
    for (;;) {
        if (end - p >= 8) {  /* eight bytes at a time, to the first that is not plain */
            uint64_t w;
            memcpy(&w, p, 8);
            uint64_t special = special_bytes(w);
            if (!special) {
                p += 8;
                continue;
            }
            p += __builtin_ctzll(special) >> 3;
        } else if (p >= end) {
            return NULL;
        }
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) return NULL;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6 || !hex(p[2]) || !hex(p[3]) || !hex(p[4]) || !hex(p[5])) return NULL;
                unsigned u = hex4(p + 2);
                if (u >= 0xDC00 && u <= 0xDFFF) return NULL;
                if (u >= 0xD800 && u <= 0xDBFF) {  /* must be followed by its low half */
                    if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !hex(p[8]) || !hex(p[9]) || !hex(p[10]) ||
                        !hex(p[11]))
                        return NULL;
                    unsigned low = hex4(p + 8);
                    if (low < 0xDC00 || low > 0xDFFF) return NULL;
                    p += 12;
                } else {
                    p += 6;
                }
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
            } else {
                return NULL;
            }
            continue;
        }
        if (c < 0x80) { p++; continue; }
        /* UTF-8, strictly: no overlong forms, no surrogates, nothing above U+10FFFF */
        if (c >= 0xC2 && c <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return NULL;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return NULL;
            if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)) return NULL;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return NULL;
            if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)) return NULL;
            p += 4;
        } else {
            return NULL;
        }
    }
}

static int literal_double(const unsigned char *p, Py_ssize_t n, double *out);

/* A number literal, by JSON's grammar. *integer: no fraction and no exponent. Long literals, longer
 * exponents and ones beyond float64 (msgspec refuses them) are not scanned. */
static const unsigned char *scan_number(const unsigned char *p, const unsigned char *end, int *integer) {
    const unsigned char *start = p;
    *integer = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        *integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const unsigned char *digits = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == digits || p - digits > 3) return NULL;
        double value;
        if (p - digits == 3 && (p - start > NUMBER_CHARS || literal_double(start, p - start, &value) < 0)) return NULL;
    }
    if (p - start > NUMBER_CHARS) return NULL;
    if (*integer && p - start - (*start == '-') > 18) return NULL;  /* may be beyond int64 */
    return p;
}

static const unsigned char *scan_literal(const unsigned char *p, const unsigned char *end, const char *word,
                                         Py_ssize_t len) {
    if (end - p < len || memcmp(p, word, (size_t)len) != 0) return NULL;
    return p + len;
}

static const unsigned char *skip_value(const unsigned char *p, const unsigned char *end, int depth);

static const unsigned char *skip_container(const unsigned char *p, const unsigned char *end, int depth) {
    int object = *p == '{';
    unsigned char close = object ? '}' : ']';
    if (depth >= MAX_DEPTH) return NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (object) {
            int escaped;
            if (p >= end || *p != '"' || !(p = scan_string(p, end, &escaped))) return NULL;
            p = skip_ws(p, end);
            if (p >= end || *p != ':') return NULL;
            p = skip_ws(p + 1, end);
        }
        if (!(p = skip_value(p, end, depth + 1))) return NULL;
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = skip_ws(p + 1, end);
    }
}

static const unsigned char *skip_value(const unsigned char *p, const unsigned char *end, int depth) {
    int flag;
    if (p >= end) return NULL;
    switch (*p) {
        case '"': return scan_string(p, end, &flag);
        case '{': case '[': return skip_container(p, end, depth);
        case 't': return scan_literal(p, end, "true", 4);
        case 'f': return scan_literal(p, end, "false", 5);
        case 'n': return scan_literal(p, end, "null", 4);
        default: return scan_number(p, end, &flag);
    }
}

/* What a read value is. */
enum { V_ABSENT = 0, V_NULL, V_INT, V_FLOAT, V_STRING, V_TRUE_FALSE, V_CONTAINER };

typedef struct { Span raw; int type; int escaped; } Value;

/* One value of kind ``kind``; NULL when it is not of that kind (msgspec would refuse it) or not
 * scanned. */
static const unsigned char *read_value(const unsigned char *p, const unsigned char *end, int kind, Value *v,
                                       int depth) {
    const unsigned char *start = p, *next;
    int flag = 0;
    if (p >= end) return NULL;
    switch (*p) {
        case '"':
            next = scan_string(p, end, &v->escaped);
            v->type = V_STRING;
            if (kind == K_ARGS) return NULL;
            break;
        case 'n':
            next = scan_literal(p, end, "null", 4);
            v->type = V_NULL;
            if (kind == K_STR) return NULL;
            break;
        case 't': case 'f':
            next = *p == 't' ? scan_literal(p, end, "true", 4) : scan_literal(p, end, "false", 5);
            v->type = V_TRUE_FALSE;
            if (kind != K_RAW) return NULL;
            break;
        case '{': case '[':
            if (kind != K_RAW) return NULL;  /* args: read by the caller */
            next = skip_container(p, end, depth);
            v->type = V_CONTAINER;
            break;
        default:
            next = scan_number(p, end, &flag);
            v->type = flag ? V_INT : V_FLOAT;
            if (kind == K_STR || kind == K_STRN || kind == K_ARGS) return NULL;
    }
    if (!next) return NULL;
    v->raw.p = start;
    v->raw.n = next - start;
    return next;
}

/* Which declared field a key is: its index, -1 an undeclared key, -2 not scanned (an escaped key,
 * which msgspec would match after unescaping). */
static int field_of(const Fields *fields, const unsigned char *key, Py_ssize_t len, int escaped) {
    if (escaped) return -2;
    for (int i = 0; i < fields->count; i++)
        if (fields->len[i] == len && same_bytes((const unsigned char *)fields->key[i], key, len)) return i;
    return -1;
}

/* An object's declared fields into ``values`` (absent ones stay V_ABSENT); ``args`` (may be NULL):
 * where an "args" object's fields go. A key given twice is not scanned (msgspec keeps the last). */
static const unsigned char *read_object(const unsigned char *p, const unsigned char *end, const Fields *fields,
                                        Value *values, const Fields *args_fields, Value *args, int depth) {
    uint64_t seen = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        int escaped;
        const unsigned char *key = p;
        if (p >= end || *p != '"' || !(p = scan_string(p, end, &escaped))) return NULL;
        int field = field_of(fields, key + 1, p - key - 2, escaped);
        if (field == -2) return NULL;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        if (field < 0) {
            if (!(p = skip_value(p, end, depth + 1))) return NULL;
        } else {
            if (seen & (1ull << field)) return NULL;
            seen |= 1ull << field;
            int kind = fields->kind[field];
            if (kind == K_ARGS && p < end && *p == '{') {
                if (!args) return NULL;
                memset(args, 0, sizeof(Value) * (size_t)args_fields->count);  /* only for events with args */
                if (!(p = read_object(p, end, args_fields, args, NULL, NULL, depth + 1))) return NULL;
                values[field].type = V_CONTAINER;
            } else if (!(p = read_value(p, end, kind, &values[field], depth + 1))) {
                return NULL;
            }
        }
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = skip_ws(p + 1, end);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Numbers, exactly as the Python path reads them.
 */
static const double EXACT_TENS[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number literal as float64, correctly rounded (msgspec's float, or float() of its int). */
static int number_double(Span s, double *out) {
    /* Clinger's fast path: at most 2**53 in the digits and a power of ten float64 holds exactly,
     * so one correctly rounded operation */
    const unsigned char *p = s.p, *end = s.p + s.n;
    int negative = 0, exponent = 0, digits = 0;
    uint64_t mantissa = 0;
    if (*p == '-') { negative = 1; p++; }
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) mantissa = mantissa * 10 + (uint64_t)(*p - '0');
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++, exponent--)
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
    }
    if (p < end) {  /* an exponent */
        int sign = 1, e = 0;
        p++;
        if (*p == '+' || *p == '-') { sign = *p == '-' ? -1 : 1; p++; }
        for (; p < end; p++) e = e * 10 + (*p - '0');
        exponent += sign * e;
    }
    if (digits <= 19 && mantissa <= (1ull << 53) && exponent >= -22 && exponent <= 22) {
        double value = (double)mantissa;
        value = exponent < 0 ? value / EXACT_TENS[-exponent] : value * EXACT_TENS[exponent];
        *out = negative ? -value : value;
        return 0;
    }
    return literal_double(s.p, s.n, out);
}

/* A number literal (at most NUMBER_CHARS) as float64 by Python's own correctly rounded reading;
 * -1 when it is beyond float64's range (msgspec refuses it) or not read whole. */
static int literal_double(const unsigned char *p, Py_ssize_t n, double *out) {
    char text[NUMBER_CHARS + 1], *stop;
    memcpy(text, p, (size_t)n);
    text[n] = 0;
    double value = PyOS_string_to_double(text, &stop, NULL);
    if (value == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    if (*stop || !isfinite(value)) return -1;
    *out = value;
    return 0;
}

/* An integer literal as int64 (at most 18 digits: scan_number saw to it). */
static long long number_int(Span s) {
    const unsigned char *p = s.p, *end = s.p + s.n;
    int negative = *p == '-';
    long long v = 0;
    for (p += negative; p < end; p++) v = v * 10 + (*p - '0');
    return negative ? -v : v;
}

#define LIMIT_NS (1ll << 62)
#define INVALID_NS INT64_MIN

/* columns.times_ns of one finite float64 of µs. */
static long long micro_to_ns(double micro) {
    const double limit = (double)LIMIT_NS / 1000.0;
    if (!(fabs(micro) < limit)) return INVALID_NS;
    double whole = floor(micro);
    double fraction = (micro - whole) * 1000.0;
    return (long long)whole * 1000 + (long long)nearbyint(fraction);
}

/* A float column's value: float64, NaN when absent or null; -1 not scanned (a string). */
static int float_value(const Value *v, double *out) {
    if (v->type == V_ABSENT || v->type == V_NULL) { *out = NAN; return 0; }
    if (v->type != V_INT && v->type != V_FLOAT) return -1;
    return number_double(v->raw, out);
}

/* An id column's value: int64, -1 when absent or null; -1 returned: not scanned. */
static int int_value(const Value *v, long long *out) {
    if (v->type == V_ABSENT || v->type == V_NULL) { *out = -1; return 0; }
    if (v->type != V_INT) return -1;
    *out = number_int(v->raw);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * The scanner object.
 */
static int fields_init(Fields *fields, PyObject *spec) {
    /* spec: a sequence of (key bytes, kind int) */
    PyObject *seq = PySequence_Fast(spec, "fields: a sequence of (key, kind)");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_FIELDS) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "too many fields"); return -1; }
    fields->keys = PyList_New(n);
    if (!fields->keys) { Py_DECREF(seq); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key;
        int kind;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Si", &key, &kind)) { Py_DECREF(seq); return -1; }
        Py_INCREF(key);
        PyList_SET_ITEM(fields->keys, i, key);
        fields->key[i] = PyBytes_AS_STRING(key);
        fields->len[i] = PyBytes_GET_SIZE(key);
        fields->kind[i] = kind;
    }
    fields->count = (int)n;
    Py_DECREF(seq);
    return 0;
}

static void scanner_clear_output(Scanner *self) {
    for (int r = 0; r < ROLES; r++) {
        self->rows[r] = 0;
        for (int c = 0; c < MOST_COLS; c++) self->cols[r][c].len = 0;
    }
    Py_CLEAR(self->flow_ids[0]);
    Py_CLEAR(self->flow_ids[1]);
    Py_CLEAR(self->messages);
    self->untimed = 0;
}

static void Scanner_dealloc(Scanner *self) {
    for (int t = 0; t < TABLES; t++) table_free(&self->tables[t]);
    for (int r = 0; r < ROLES; r++)
        for (int c = 0; c < MOST_COLS; c++) PyMem_Free(self->cols[r][c].data);
    scanner_clear_output(self);
    Py_CLEAR(self->event.keys);
    Py_CLEAR(self->args.keys);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds) {
    PyObject *event_spec, *args_spec, *callbacks;
    static char *names[] = {"event_fields", "args_fields", "callbacks", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO", names, &event_spec, &args_spec, &callbacks)) return -1;
    if (self->ready) { PyErr_SetString(PyExc_RuntimeError, "Scanner initialised twice"); return -1; }
    if (fields_init(&self->event, event_spec) < 0 || fields_init(&self->args, args_spec) < 0) return -1;
    if (self->event.count < E_USED || self->args.count < A_USED) {
        PyErr_SetString(PyExc_ValueError, "fewer fields than the columns use");
        return -1;
    }
    PyObject *seq = PySequence_Fast(callbacks, "callbacks: a sequence");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != TABLES) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "expected %d callbacks", TABLES);
        return -1;
    }
    for (int t = 0; t < TABLES; t++)
        if (table_init(&self->tables[t], PySequence_Fast_GET_ITEM(seq, t)) < 0) { Py_DECREF(seq); return -1; }
    Py_DECREF(seq);
    self->ready = 1;
    return 0;
}

/* A text value's code in table ``t``; the key is its raw bytes (empty when absent). */
static inline int code_of(Scanner *self, int t, const Value *v, long long *code) {
    return table_code(&self->tables[t], v->raw.p ? v->raw.p : (const unsigned char *)"", v->raw.n, code);
}

static const Value NO_ARGS[MAX_FIELDS];  /* an event without args: every field absent */

/* Result of one event: 0 done, 1 not scanned, -1 a Python error. */
#define NOT_SCANNED 1
#define TRY(x) do { if ((x) < 0) return -1; } while (0)
#define TRY_VALUE(x) do { if ((x) < 0) return NOT_SCANNED; } while (0)

static int emit_common(Scanner *self, int role, const Value *e, long long ns, int pid_col, int tid_col, int ts_col) {
    long long code;
    Buf *cols = self->cols[role];
    TRY(code_of(self, T_PID, &e[E_PID], &code));
    TRY(put_i32(&cols[pid_col], code));
    TRY(code_of(self, T_TID, &e[E_TID], &code));
    TRY(put_i32(&cols[tid_col], code));
    TRY(put_i64(&cols[ts_col], ns));
    return 0;
}

static PyObject *flow_id(const Value *v) {
    if (v->type == V_ABSENT || v->type == V_NULL) Py_RETURN_NONE;
    return PyLong_FromLongLong(number_int(v->raw));
}

static int emit(Scanner *self, const Value *e, const Value *a) {
    const Value *ph = &e[E_PH];
    /* ph is a string (read_value saw to it) or absent (""); an escaped one: not scanned */
    if (ph->type == V_STRING && ph->escaped) return NOT_SCANNED;
    char kind = ph->type == V_STRING && ph->raw.n == 3 ? (char)ph->raw.p[1] : 0;
    const Value *ts = &e[E_TS];
    if (ts->type == V_ABSENT || ts->type == V_NULL) {
        self->untimed += kind == 'X' || kind == 'i' || kind == 'I';
        return 0;
    }
    if (ts->type != V_INT && ts->type != V_FLOAT) return NOT_SCANNED;  /* a string: the Python way */
    long long code;
    double micro, value;
    TRY_VALUE(number_double(ts->raw, &micro));
    long long ns = micro_to_ns(micro);
    if (kind == 'X') {
        TRY(code_of(self, T_XROLE, &e[E_CAT], &code));
        int role = (int)(code & 3);
        long long role_code = code >> 2;
        if (role == 0) return 0;
        if (role == 1) {  /* host */
            Buf *c = self->cols[R_HOST];
            long long correlation;
            double dur;
            TRY_VALUE(int_value(&a[A_CORRELATION], &correlation));
            TRY_VALUE(float_value(&e[E_DUR], &dur));
            TRY(emit_common(self, R_HOST, e, ns, H_PID, H_TID, H_TS));
            TRY(code_of(self, T_NAME, &e[E_NAME], &code));
            TRY(put_i32(&c[H_NAME], code >> 1));
            TRY(put_i32(&c[H_CAT], role_code));
            TRY(code_of(self, T_SHAPES, &a[A_DIMS], &code));
            TRY(put_i32(&c[H_SHAPES], code));
            TRY(code_of(self, T_TYPES, &a[A_TYPES], &code));
            TRY(put_i32(&c[H_TYPES], code));
            TRY(code_of(self, T_STACK, &a[A_STACK], &code));
            TRY(put_i32(&c[H_STACK], code));
            /* the process group from its name and description: both raw values, NUL between */
            const Value *name = &a[A_PG_NAME], *desc = &a[A_PG_DESC];
            if (name->raw.n + desc->raw.n == 0) {
                TRY(table_code(&self->tables[T_PG], (const unsigned char *)"\0", 1, &code));
            } else {
                unsigned char stack_key[512];
                Py_ssize_t len = name->raw.n + 1 + desc->raw.n;
                unsigned char *key = len <= (Py_ssize_t)sizeof stack_key ? stack_key : PyMem_Malloc((size_t)len);
                if (!key) { PyErr_NoMemory(); return -1; }
                if (name->raw.n) memcpy(key, name->raw.p, (size_t)name->raw.n);
                key[name->raw.n] = 0;
                if (desc->raw.n) memcpy(key + name->raw.n + 1, desc->raw.p, (size_t)desc->raw.n);
                int failed = table_code(&self->tables[T_PG], key, len, &code);
                if (key != stack_key) PyMem_Free(key);
                TRY(failed);
            }
            TRY(put_i32(&c[H_PG], code));
            TRY(put_f64(&c[H_DUR], dur));
            TRY(put_i64(&c[H_CORRELATION], correlation));
            if (a[A_NELEMS].type != V_ABSENT) {  /* a collective's message: its size in Python (rare) */
                if (!self->messages && !(self->messages = PyList_New(0))) return -1;
                const Value *dtype = &a[A_DTYPE];
                PyObject *item = Py_BuildValue("(ny#y#)", self->rows[R_HOST], a[A_NELEMS].raw.p, a[A_NELEMS].raw.n,
                                               dtype->raw.p ? (const char *)dtype->raw.p : "", dtype->raw.n);
                if (!item) return -1;
                int failed = PyList_Append(self->messages, item);
                Py_DECREF(item);
                TRY(failed);
            }
            self->rows[R_HOST]++;
            return 0;
        }
        /* a device task */
        Buf *c = self->cols[R_DEVICE];
        long long stream, correlation;
        double dur;
        TRY_VALUE(float_value(&e[E_DUR], &dur));
        TRY_VALUE(int_value(&a[A_CORRELATION], &correlation));
        if (a[A_STREAM].type == V_ABSENT || a[A_STREAM].type == V_NULL) {  /* its thread is its stream */
            TRY_VALUE(int_value(&e[E_TID], &stream));
        } else {
            TRY_VALUE(int_value(&a[A_STREAM], &stream));
        }
        TRY(emit_common(self, R_DEVICE, e, ns, D_PID, D_TID, D_TS));
        TRY(code_of(self, T_NAME, &e[E_NAME], &code));
        TRY(put_i32(&c[D_NAME], code >> 1));
        TRY(put_i32(&c[D_TASK], role_code));
        TRY(put_f64(&c[D_DUR], dur));
        TRY(put_i64(&c[D_STREAM], stream));
        TRY(put_i64(&c[D_CORRELATION], correlation));
        self->rows[R_DEVICE]++;
        return 0;
    }
    if (kind == 's' || kind == 'f' || kind == 't') {
        TRY(code_of(self, T_FLOWROLE, &e[E_CAT], &code));
        int role = code == 1 ? R_FLOW : code == 2 && kind != 't' ? R_FWDBWD : -1;
        if (role < 0) return 0;
        const Value *id = &e[E_ID];
        if (id->type != V_ABSENT && id->type != V_NULL && id->type != V_INT) return NOT_SCANNED;
        Buf *c = self->cols[role];
        TRY(emit_common(self, role, e, ns, F_PID, F_TID, F_TS));
        TRY(code_of(self, T_PH, ph, &code));
        TRY(put_i32(&c[F_PH], code));
        TRY(put_u8(&c[F_IS_F], kind == 'f'));
        PyObject **ids = &self->flow_ids[role - R_FLOW];
        if (!*ids && !(*ids = PyList_New(0))) return -1;
        PyObject *item = flow_id(id);
        if (!item) return -1;
        int failed = PyList_Append(*ids, item);
        Py_DECREF(item);
        TRY(failed);
        self->rows[role]++;
        return 0;
    }
    if (kind == 'i' || kind == 'I') {
        TRY(code_of(self, T_NAME, &e[E_NAME], &code));
        if (!(code & 1)) return 0;  /* not a [memory] instant */
        Buf *c = self->cols[R_MEMORY];
        long long device_id, addr;
        TRY_VALUE(int_value(&a[A_DEVICE_ID], &device_id));
        TRY_VALUE(int_value(&a[A_ADDR], &addr));
        TRY(emit_common(self, R_MEMORY, e, ns, M_PID, M_TID, M_TS));
        TRY(put_i32(&c[M_NAME], code >> 1));
        TRY(put_i64(&c[M_DEVICE_ID], device_id));
        TRY(put_i64(&c[M_ADDR], addr));
        TRY_VALUE(float_value(&a[A_BYTES], &value));
        TRY(put_f64(&c[M_BYTES], value));
        TRY_VALUE(float_value(&a[A_ALLOCATED], &value));
        TRY(put_f64(&c[M_ALLOCATED], value));
        TRY_VALUE(float_value(&a[A_RESERVED], &value));
        TRY(put_f64(&c[M_RESERVED], value));
        self->rows[R_MEMORY]++;
        return 0;
    }
    return 0;
}

static const int COLUMN_SIZES[ROLES][MOST_COLS] = {
    {4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8},
    {4, 4, 4, 4, 8, 8, 8, 8},
    {4, 4, 4, 8, 8, 8, 8, 8, 8},
    {4, 4, 8, 4, 1},
    {4, 4, 8, 4, 1},
};

static PyObject *role_output(Scanner *self, int role) {
    if (!self->rows[role]) Py_RETURN_NONE;
    int extra = role == R_HOST || role >= R_FLOW;
    PyObject *out = PyTuple_New(ROLE_COLS[role] + extra);
    if (!out) return NULL;
    for (int c = 0; c < ROLE_COLS[role]; c++) {
        Buf *b = &self->cols[role][c];
        if (b->len != self->rows[role] * COLUMN_SIZES[role][c]) {  /* every column one value a row */
            Py_DECREF(out);
            PyErr_SetString(PyExc_AssertionError, "scanned columns of unequal length");
            return NULL;
        }
        PyObject *column = PyByteArray_FromStringAndSize(b->data, b->len);
        if (!column) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, c, column);
    }
    if (extra) {
        PyObject *more = role == R_HOST ? self->messages : self->flow_ids[role - R_FLOW];
        if (!more) more = Py_None;
        Py_INCREF(more);
        PyTuple_SET_ITEM(out, ROLE_COLS[role], more);
    }
    return out;
}

/* A Python error raised by a callback: an ordinary exception (a value msgspec refuses) means "not
 * scanned"; anything else (KeyboardInterrupt, MemoryError) goes on. */
static int refused(void) {
    if (PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

PyDoc_STRVAR(scan_doc,
"scan(chunk) -> (events, untimed, host, device, memory, flow, fwdbwd) or None\n\n"
"A chunk's bytes (a JSON array of events) into columns; None when it is not scanned.");

static PyObject *Scanner_scan(Scanner *self, PyObject *arg) {
    if (!self->ready) { PyErr_SetString(PyExc_RuntimeError, "Scanner not initialised"); return NULL; }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = view.buf, *end = p + view.len;
    Py_ssize_t events = 0;
    int status = 0;
    Value e[MAX_FIELDS], a[MAX_FIELDS];
    scanner_clear_output(self);
    p = skip_ws(p, end);
    if (p >= end || *p != '[') { status = NOT_SCANNED; goto done; }
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') { p++; goto tail; }
    for (;;) {
        if (p >= end || *p != '{') { status = NOT_SCANNED; goto done; }
        memset(e, 0, sizeof(Value) * (size_t)self->event.count);
        p = read_object(p, end, &self->event, e, &self->args, a, 1);
        if (!p) { status = NOT_SCANNED; goto done; }
        events++;
        status = emit(self, e, e[E_ARGS].type == V_CONTAINER ? a : NO_ARGS);
        if (status) goto done;
        p = skip_ws(p, end);
        if (p >= end) { status = NOT_SCANNED; goto done; }
        if (*p == ']') { p++; break; }
        if (*p != ',') { status = NOT_SCANNED; goto done; }
        p = skip_ws(p + 1, end);
    }
tail:
    p = skip_ws(p, end);
    if (p != end) status = NOT_SCANNED;
done:
    PyBuffer_Release(&view);
    if (status < 0 && refused()) status = NOT_SCANNED;
    if (status < 0) { scanner_clear_output(self); return NULL; }
    if (status == NOT_SCANNED) { scanner_clear_output(self); Py_RETURN_NONE; }
    PyObject *out = PyTuple_New(2 + ROLES);
    if (!out) return NULL;
    PyTuple_SET_ITEM(out, 0, PyLong_FromSsize_t(events));
    PyTuple_SET_ITEM(out, 1, PyLong_FromSsize_t(self->untimed));
    for (int r = 0; r < ROLES; r++) {
        PyObject *role = role_output(self, r);
        if (!role) { Py_DECREF(out); scanner_clear_output(self); return NULL; }
        PyTuple_SET_ITEM(out, 2 + r, role);
    }
    if (!PyTuple_GET_ITEM(out, 0) || !PyTuple_GET_ITEM(out, 1)) { Py_DECREF(out); return NULL; }
    scanner_clear_output(self);
    return out;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O, scan_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Scanner_doc,
"Scanner(event_fields, args_fields, callbacks)\n\n"
"event_fields, args_fields: (key bytes, kind) of every field the msgspec structs declare, the\n"
"columns' own first; callbacks: one per text table (raw value bytes -> code).");

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perfcmp.readers._eventscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Scanner_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_eventscan", "Kineto trace events into columns (the readers' optional fast path).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__eventscan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "K_STR", K_STR) || PyModule_AddIntConstant(m, "K_STRN", K_STRN) ||
        PyModule_AddIntConstant(m, "K_NUM", K_NUM) ||
        PyModule_AddIntConstant(m, "K_RAW", K_RAW) || PyModule_AddIntConstant(m, "K_ARGS", K_ARGS) ||
        PyModule_AddIntConstant(m, "INTERFACE", INTERFACE)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
