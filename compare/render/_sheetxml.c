/* perfcmp.render._sheetxml: a block of worksheet rows straight into XML bytes.
 *
 * The optional fast path of render/ooxml.py's Sheet: the rows of a block (its columns of Python
 * values and cell styles) are written as the XML the pure-Python writer makes for them
 * (ooxml._column_cells, the row pattern, UTF-8), byte for byte, without a Python string per cell.
 * The Python writer stays the reference and the fallback; the tests compare the two on generated
 * blocks of every kind of value.
 *
 * Per cell, as ooxml._column_cells decides (exact types, in this order):
 *   a non-empty str   inline text, cut to Excel's limit by the Python side's over_limit / cut_text,
 *                     "&", "<", ">" escaped and, unless its column is known clean, the characters
 *                     XML 1.0 forbids dropped;
 *   a float           finite: its repr (the Python side's float encoder, msgspec's shortest digits,
 *                     which are repr's in fixed notation; repr itself in exponent range), else a
 *                     blank;
 *   None or ""        a blank: a styled empty cell, or nothing for style 0;
 *   a bool            t="b", 0 or 1;
 *   anything else     int(value).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* What ooxml expects of this module: a module built from older source, left in place by an
 * editable install, is then not used. */
#define INTERFACE 1

#define CUT_CHECK_CHARS 16383 /* TEXT_LIMIT // 2: only a longer text can be over the limit */

/* ------------------------------------------------------------------------------------------------
 * A growable byte buffer.
 */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_grow(Buf *b, Py_ssize_t more) {
    Py_ssize_t want = b->len + more;
    if (want <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < want) cap *= 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int put(Buf *b, const char *s, Py_ssize_t n) {
    if (b->len + n > b->cap && buf_grow(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

#define PUT_LITERAL(b, s) put((b), (s), (Py_ssize_t)(sizeof(s) - 1))

/* The decimal digits of v into out (at least 21 bytes); returns their count. */
static int int_text(long long v, char *out) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int k = 0;
    if (v < 0) out[k++] = '-';
    while (n) out[k++] = tmp[--n];
    return k;
}

/* ASCII text of a str object (letters, heights, a repr): its data, or NULL with an error set. */
static const char *ascii_of(PyObject *s, Py_ssize_t *n) {
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s)) {
        PyErr_SetString(PyExc_TypeError, "expected an ASCII str");
        return NULL;
    }
    *n = PyUnicode_GET_LENGTH(s);
    return (const char *)PyUnicode_DATA(s);
}

/* Per byte: MARKUP for "&", "<", ">"; FORBIDDEN for what may start a character XML 1.0 forbids
 * (controls but tab, line feed and carriage return; 0xEF, the lead byte of U+FFFE and U+FFFF). */
enum { MARKUP = 1, FORBIDDEN = 2 };
static unsigned char special[256];

static void init_special(void) {
    special['&'] = special['<'] = special['>'] = MARKUP;
    for (int c = 0; c < 0x20; c++)
        if (c != '\t' && c != '\n' && c != '\r') special[c] = FORBIDDEN;
    special[0xEF] = FORBIDDEN;
}

/* UTF-8 bytes s[0:n] escaped as XML text: "&", "<", ">" as entities; with drop, the characters
 * XML 1.0 forbids left out. */
static int put_escaped(Buf *b, const unsigned char *s, Py_ssize_t n, int drop) {
    const unsigned char mask = drop ? (MARKUP | FORBIDDEN) : MARKUP;
    Py_ssize_t i = 0, start = 0;
    for (;;) {
        while (i < n && !(special[s[i]] & mask)) i++;  /* the usual text: no byte to look at twice */
        if (i >= n) break;
        unsigned char c = s[i];
        const char *entity = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : NULL;
        Py_ssize_t skip = 0;
        if (!entity && c != 0xEF) skip = 1;  /* a forbidden control */
        else if (!entity && i + 2 < n && s[i + 1] == 0xBF && (s[i + 2] == 0xBE || s[i + 2] == 0xBF)) skip = 3;
        if (!entity && !skip) {  /* another character of 0xEF's block: kept */
            i++;
            continue;
        }
        if (put(b, (const char *)s + start, i - start) < 0) return -1;
        if (entity && put(b, entity, (Py_ssize_t)strlen(entity)) < 0) return -1;
        i += entity ? 1 : skip;
        start = i;
    }
    return put(b, (const char *)s + start, n - start);
}

/* ------------------------------------------------------------------------------------------------
 * One column's cells: its values, styles and, for its floats, their texts from the float encoder.
 */
typedef struct {
    PyObject *values;     /* list */
    PyObject *styles;     /* list of int */
    const char *letter;
    Py_ssize_t letter_len;
    int clean;            /* its texts hold no character XML forbids */
    PyObject *floats;     /* bytes: the encoder's JSON array of the column's floats, or NULL */
    const char *token;    /* the next float's text in floats */
} Column;

/* ' s="N"' for a style other than 0, into out; returns its length. */
static int style_attribute(long style, char *out) {
    if (!style) return 0;
    memcpy(out, " s=\"", 4);
    int n = 4 + int_text(style, out + 4);
    out[n++] = '"';
    return n;
}

/* The encoder's text of the next float (its JSON array: "[a,b,null,...]"); advances past it. */
static const char *next_token(Column *col, Py_ssize_t *n) {
    const char *p = col->token, *end = PyBytes_AS_STRING(col->floats) + PyBytes_GET_SIZE(col->floats);
    const char *q = p;
    while (q < end && *q != ',' && *q != ']') q++;
    if (q >= end) {
        PyErr_SetString(PyExc_ValueError, "the float encoder gave fewer texts than floats");
        return NULL;
    }
    col->token = q + 1;
    *n = q - p;
    return p;
}

/* Where repr writes a float in exponent notation (ooxml._exponent_range). */
static inline int exponent_range(double v) {
    double m = fabs(v);
    return m >= 1e16 || (m < 1e-4 && m != 0.0);
}

static int put_ref(Buf *b, Column *col, const char *number, int number_len) {
    if (PUT_LITERAL(b, "<c r=\"") < 0 || put(b, col->letter, col->letter_len) < 0 || put(b, number, number_len) < 0)
        return -1;
    return PUT_LITERAL(b, "\"");
}

/* The XML of cell i of a column (Python: ooxml._column_cells); cuts counts texts cut. */
static int put_cell(Buf *b, Column *col, Py_ssize_t i, const char *number, int number_len, PyObject *over_limit,
                    PyObject *cut_text, Py_ssize_t *cuts) {
    PyObject *value = PyList_GET_ITEM(col->values, i);
    long style = PyLong_AsLong(PyList_GET_ITEM(col->styles, i));
    if (style == -1 && PyErr_Occurred()) return -1;
    char attribute[32];
    int attribute_len = style_attribute(style, attribute);

    if (PyUnicode_CheckExact(value) && PyUnicode_GET_LENGTH(value) > 0) {
        PyObject *text = value, *owned = NULL, *utf8 = NULL;
        if (PyUnicode_GET_LENGTH(value) > CUT_CHECK_CHARS) {
            PyObject *over = PyObject_CallOneArg(over_limit, value);
            if (!over) return -1;
            int is_over = PyObject_IsTrue(over);
            Py_DECREF(over);
            if (is_over < 0) return -1;
            if (is_over) {
                text = owned = PyObject_CallOneArg(cut_text, value);
                if (!owned) return -1;
                if (!PyUnicode_Check(owned)) {
                    Py_DECREF(owned);
                    PyErr_SetString(PyExc_TypeError, "cut_text did not return a str");
                    return -1;
                }
                (*cuts)++;
            }
        }
        const unsigned char *s;
        Py_ssize_t n;
        if (PyUnicode_IS_ASCII(text)) {
            s = (const unsigned char *)PyUnicode_DATA(text);
            n = PyUnicode_GET_LENGTH(text);
        } else {
            utf8 = PyUnicode_AsUTF8String(text); /* a lone surrogate raises, as the Python writer's encode does */
            if (!utf8) {
                Py_XDECREF(owned);
                return -1;
            }
            s = (const unsigned char *)PyBytes_AS_STRING(utf8);
            n = PyBytes_GET_SIZE(utf8);
        }
        int rc = put_ref(b, col, number, number_len);
        if (rc == 0) rc = put(b, attribute, attribute_len);
        if (rc == 0) rc = PUT_LITERAL(b, " t=\"inlineStr\"><is><t xml:space=\"preserve\">");
        if (rc == 0) rc = put_escaped(b, s, n, !col->clean);
        if (rc == 0) rc = PUT_LITERAL(b, "</t></is></c>");
        Py_XDECREF(utf8);
        Py_XDECREF(owned);
        return rc;
    }
    if (PyFloat_CheckExact(value)) {
        double v = PyFloat_AS_DOUBLE(value);
        Py_ssize_t n;
        const char *token = next_token(col, &n);  /* every float has one, finite or not */
        if (!token) return -1;
        if (!isfinite(v)) goto blank;
        if (put_ref(b, col, number, number_len) < 0 || put(b, attribute, attribute_len) < 0 ||
            PUT_LITERAL(b, "><v>") < 0)
            return -1;
        if (exponent_range(v)) {
            PyObject *r = PyObject_Repr(value);
            if (!r) return -1;
            Py_ssize_t rn;
            const char *rs = ascii_of(r, &rn);
            int rc = rs ? put(b, rs, rn) : -1;
            Py_DECREF(r);
            if (rc < 0) return -1;
        } else if (put(b, token, n) < 0) {
            return -1;
        }
        return PUT_LITERAL(b, "</v></c>");
    }
    if (value == Py_None || PyUnicode_CheckExact(value)) goto blank;
    if (PyBool_Check(value)) {
        if (put_ref(b, col, number, number_len) < 0 || put(b, attribute, attribute_len) < 0) return -1;
        return value == Py_True ? PUT_LITERAL(b, " t=\"b\"><v>1</v></c>") : PUT_LITERAL(b, " t=\"b\"><v>0</v></c>");
    }
    {
        PyObject *whole = PyNumber_Long(value);  /* int(value), as the Python writer takes it */
        if (!whole) return -1;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(whole, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(whole);
            return -1;
        }
        int rc = put_ref(b, col, number, number_len);
        if (rc == 0) rc = put(b, attribute, attribute_len);
        if (rc == 0) rc = PUT_LITERAL(b, "><v>");
        if (rc == 0 && !overflow) {
            char digits[24];
            rc = put(b, digits, int_text(v, digits));
        } else if (rc == 0) {  /* beyond 64 bits: str() */
            PyObject *text = PyObject_Str(whole);
            Py_ssize_t tn;
            const char *ts = text ? ascii_of(text, &tn) : NULL;
            rc = ts ? put(b, ts, tn) : -1;
            Py_XDECREF(text);
        }
        Py_DECREF(whole);
        if (rc == 0) rc = PUT_LITERAL(b, "</v></c>");
        return rc;
    }
blank:
    if (!style) return 0;  /* a blank of the default style is no cell at all */
    if (put_ref(b, col, number, number_len) < 0 || put(b, attribute, attribute_len) < 0) return -1;
    return PUT_LITERAL(b, "/>");
}

/* Hand the buffer's bytes to take(view), a memoryview over them that is released when take
 * returns (so nothing can read the buffer after it is reused). */
static int hand_over(Buf *b, PyObject *take) {
    PyObject *view = PyMemoryView_FromMemory(b->data, b->len, PyBUF_READ);
    if (!view) return -1;
    PyObject *r = PyObject_CallOneArg(take, view);
    /* take's error (a stop signal's, say) is kept aside while the view is released: no call
     * may run with an error set, and the error raised must be take's own */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    Py_DECREF(view);
    Py_XDECREF(released);
    if (type) {
        PyErr_Restore(type, value, traceback);  /* replaces an error of the release, if any */
        Py_XDECREF(r);
        return -1;
    }
    if (!released) {
        Py_XDECREF(r);
        return -1;
    }
    Py_DECREF(r);
    b->len = 0;
    return 0;
}

/* The buffer rows() writes into, kept from one block to the next: a fresh one each time would be
 * fresh pages from the kernel each time (a quarter of the time went to page faults). */
static Buf kept = {NULL, 0, 0};
static int kept_busy = 0;  /* rows() called again from take(): that call has a buffer of its own */
#define KEPT_MOST (8 << 20)  /* a buffer grown past this (a block of huge rows) is not kept */

PyDoc_STRVAR(rows_doc,
"rows(take, flush, first, letters, columns, styles, heights, clean, encode_floats, over_limit, cut_text)\n"
"--\n\n"
"Write the XML of a block of rows, handing it to ``take(view)`` (a memoryview, valid only during\n"
"the call) each time ``flush`` bytes or more are made (at a row's end), and at the block's end.\n"
"``first``: the first row's number; per column: its letter, values (a list) and styles (a list\n"
"of int); ``heights``: per row its height attribute text (a str, \"\" for none) or None;\n"
"``clean``: per column whether its texts are known to hold no character XML forbids.\n"
"``encode_floats(list)`` gives a list of floats as a JSON array (msgspec.json.encode); a text\n"
"longer than a cell may hold is cut by ``cut_text`` when ``over_limit`` says so. Returns the\n"
"number of texts cut.");

/* Whether a function called with nargs arguments takes them (else a TypeError is set). */
static int takes(const char *name, Py_ssize_t nargs, Py_ssize_t want) {
    if (nargs == want) return 1;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
    return 0;
}

static PyObject *rows(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (!takes("rows", nargs, 11)) return NULL;
    PyObject *take = args[0], *letters = args[3], *columns = args[4], *styles = args[5];
    PyObject *heights = args[6], *clean = args[7], *encode = args[8], *over_limit = args[9], *cut_text = args[10];
    Py_ssize_t flush = PyLong_AsSsize_t(args[1]);
    long long first = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_Check(letters) || !PyList_Check(columns) || !PyList_Check(styles) || !PyList_Check(clean) ||
        (heights != Py_None && !PyList_Check(heights))) {
        PyErr_SetString(PyExc_TypeError, "rows(): letters, columns, styles and clean must be lists");
        return NULL;
    }
    Py_ssize_t k = PyList_GET_SIZE(columns);
    if (PyList_GET_SIZE(styles) != k || PyList_GET_SIZE(clean) != k || PyList_GET_SIZE(letters) < k) {
        PyErr_SetString(PyExc_ValueError, "rows(): columns, styles and clean differ in length, or too few letters");
        return NULL;
    }
    Py_ssize_t n = k ? (PyList_Check(PyList_GET_ITEM(columns, 0)) ? PyList_GET_SIZE(PyList_GET_ITEM(columns, 0)) : -1) : 0;
    if (heights != Py_None && k && PyList_GET_SIZE(heights) != n) n = -1;
    Column *cols = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Column));
    if (!cols) return PyErr_NoMemory();
    int own = kept_busy;
    Buf local = {NULL, 0, 0}, *buf = own ? &local : &kept;
    kept_busy = 1;
    buf->len = 0;
    Buf b = *buf;  /* written through a local copy, put back at the end */
    Py_ssize_t cuts = 0;
    PyObject *result = NULL;
    for (Py_ssize_t j = 0; j < k; j++) {
        Column *col = &cols[j];
        col->values = PyList_GET_ITEM(columns, j);
        col->styles = PyList_GET_ITEM(styles, j);
        if (n < 0 || !PyList_Check(col->values) || !PyList_Check(col->styles) || PyList_GET_SIZE(col->values) != n ||
            PyList_GET_SIZE(col->styles) != n) {
            PyErr_SetString(PyExc_ValueError, "rows(): every column and its styles must be lists of the block's rows");
            goto done;
        }
        col->letter = ascii_of(PyList_GET_ITEM(letters, j), &col->letter_len);
        if (!col->letter) goto done;
        int is_clean = PyObject_IsTrue(PyList_GET_ITEM(clean, j));
        if (is_clean < 0) goto done;
        col->clean = is_clean;
        /* the column's floats, encoded at once (msgspec: ~30 ns a float, repr ~500) */
        Py_ssize_t count = 0;
        for (Py_ssize_t i = 0; i < n; i++) count += PyFloat_CheckExact(PyList_GET_ITEM(col->values, i));
        if (!count) continue;
        PyObject *floats = count == n ? (Py_INCREF(col->values), col->values) : PyList_New(count);
        if (!floats) goto done;
        if (count != n) {
            for (Py_ssize_t i = 0, f = 0; i < n; i++) {
                PyObject *v = PyList_GET_ITEM(col->values, i);
                if (PyFloat_CheckExact(v)) {
                    Py_INCREF(v);
                    PyList_SET_ITEM(floats, f++, v);
                }
            }
        }
        col->floats = PyObject_CallOneArg(encode, floats);
        Py_DECREF(floats);
        if (!col->floats) goto done;
        if (!PyBytes_Check(col->floats) || PyBytes_GET_SIZE(col->floats) < 2) {
            PyErr_SetString(PyExc_TypeError, "the float encoder must return a JSON array as bytes");
            goto done;
        }
        col->token = PyBytes_AS_STRING(col->floats) + 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char number[24];
        int number_len = int_text(first + i, number);
        if (PUT_LITERAL(&b, "<row r=\"") < 0 || put(&b, number, number_len) < 0 || PUT_LITERAL(&b, "\"") < 0) goto done;
        if (heights != Py_None) {
            Py_ssize_t hn;
            const char *h = ascii_of(PyList_GET_ITEM(heights, i), &hn);
            if (!h || put(&b, h, hn) < 0) goto done;
        }
        if (PUT_LITERAL(&b, ">") < 0) goto done;
        for (Py_ssize_t j = 0; j < k; j++)
            if (put_cell(&b, &cols[j], i, number, number_len, over_limit, cut_text, &cuts) < 0) goto done;
        if (PUT_LITERAL(&b, "</row>") < 0) goto done;
        if (b.len >= flush && hand_over(&b, take) < 0) goto done;
    }
    if (b.len && hand_over(&b, take) < 0) goto done;
    result = PyLong_FromSsize_t(cuts);
done:
    for (Py_ssize_t j = 0; j < k; j++) Py_XDECREF(cols[j].floats);
    PyMem_Free(cols);
    if (own || b.cap > KEPT_MOST) {
        PyMem_Free(b.data);
        b.data = NULL;
        b.cap = 0;
    }
    b.len = 0;
    *buf = b;
    if (!own) kept_busy = 0;
    return result;
}

/* ------------------------------------------------------------------------------------------------
 * Text cells of a detail sheet made from its child table's rows (render/detail_text.py): a line
 * per child row, formatted as the Python line functions do, joined per cell.
 */
enum { KERNEL_LINES = 0, GROUP_LINES = 1, ALLOC_LINES = 2 };

/* format(v, f".{decimals}f"), which is this very call in CPython (float.__format__). */
static int put_fixed(Buf *b, double v, int decimals) {
    char *text = PyOS_double_to_string(v, 'f', decimals, 0, NULL);
    if (!text) return -1;
    int rc = put(b, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return rc;
}

/* A str's UTF-8 (ASCII: its own data); NULL, with no error set, when it has none (a lone
 * surrogate): the cell is then made by Python; NULL with the error set for any other failure. */
static const char *utf8_of(PyObject *s, Py_ssize_t *n) {
    if (PyUnicode_IS_ASCII(s)) {
        *n = PyUnicode_GET_LENGTH(s);
        return (const char *)PyUnicode_DATA(s);
    }
    const char *u = PyUnicode_AsUTF8AndSize(s, n);
    if (!u && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) PyErr_Clear();
    return u;
}

static int is_plain_task(PyObject *task, PyObject *plain) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(plain); i++) {
        PyObject *p = PyTuple_GET_ITEM(plain, i);
        if (PyUnicode_CheckExact(p) && PyUnicode_Compare(task, p) == 0) return 1;
    }
    return 0;
}

/* Line i of the child rows (values columns[k][i]) into b: 1 written, 0 not of the kinds written
 * here (b unchanged: the cell is made by Python), -1 an error. */
static int put_line(Buf *b, int layout, PyObject *columns, Py_ssize_t i, PyObject *plain) {
    Py_ssize_t mark = b->len, n;
#define VALUE(k) PyList_GET_ITEM(PyList_GET_ITEM(columns, (k)), i)
    PyObject *name = VALUE(1);
    if (!PyUnicode_CheckExact(name)) return 0;
    const char *s = utf8_of(name, &n);
    if (!s || put(b, s, n) < 0) goto other;
    if (layout == KERNEL_LINES) {
        PyObject *task = VALUE(2), *shapes = VALUE(3), *dur = VALUE(4);
        if ((task != Py_None && !PyUnicode_CheckExact(task)) || (shapes != Py_None && !PyUnicode_CheckExact(shapes)) ||
            !PyFloat_CheckExact(dur))
            goto other;
        if (task != Py_None && PyUnicode_GET_LENGTH(task) && !is_plain_task(task, plain)) {
            if (!(s = utf8_of(task, &n)) || PUT_LITERAL(b, ", ") < 0 || put(b, s, n) < 0) goto other;
        }
        if (shapes != Py_None && PyUnicode_GET_LENGTH(shapes)) {
            if (!(s = utf8_of(shapes, &n)) || PUT_LITERAL(b, ", [input shapes: ") < 0 || put(b, s, n) < 0 ||
                PUT_LITERAL(b, "]") < 0)
                goto other;
        }
        if (PUT_LITERAL(b, " [duration: ") < 0 || put_fixed(b, PyFloat_AS_DOUBLE(dur), 3) < 0 || PUT_LITERAL(b, "]\n") < 0)
            return -1;
        return 1;
    }
    if (layout == GROUP_LINES) {
        PyObject *number = VALUE(2), *dur = VALUE(3);
        if (!PyLong_CheckExact(number) || !PyFloat_CheckExact(dur)) goto other;
        int overflow = 0;
        long long count = PyLong_AsLongLongAndOverflow(number, &overflow);
        if (overflow || (count == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            goto other;
        }
        char digits[24];
        if (PUT_LITERAL(b, ", [number: ") < 0 || put(b, digits, int_text(count, digits)) < 0 ||
            PUT_LITERAL(b, "], [duration_ms: ") < 0 || put_fixed(b, PyFloat_AS_DOUBLE(dur) / 1000.0, 3) < 0 ||
            PUT_LITERAL(b, "]\n") < 0)
            return -1;
        return 1;
    }
    {
        PyObject *alloc = VALUE(2), *release = VALUE(3), *size = VALUE(4);
        if (!PyFloat_CheckExact(alloc) || (release != Py_None && !PyFloat_CheckExact(release)) ||
            !(PyFloat_CheckExact(size) || PyLong_CheckExact(size)))
            goto other;
        double kb = PyLong_CheckExact(size) ? PyLong_AsDouble(size) : PyFloat_AS_DOUBLE(size);
        if (kb == -1.0 && PyErr_Occurred()) {  /* an int beyond a float: Python's line says so */
            PyErr_Clear();
            goto other;
        }
        double a = PyFloat_AS_DOUBLE(alloc);
        int released = release != Py_None && isfinite(PyFloat_AS_DOUBLE(release));
        double r = released ? PyFloat_AS_DOUBLE(release) : 0.0;
        if (PUT_LITERAL(b, ", (") < 0 || put_fixed(b, a, 3) < 0 || PUT_LITERAL(b, ", ") < 0) return -1;
        if (released ? put_fixed(b, r, 3) < 0 : PUT_LITERAL(b, "N/A") < 0) return -1;
        if (PUT_LITERAL(b, "), [duration: ") < 0 || put_fixed(b, released ? r - a : 0.0, 3) < 0 ||
            PUT_LITERAL(b, "], [size: ") < 0 || put_fixed(b, kb / 1024.0, 2) < 0 || PUT_LITERAL(b, "]\n") < 0)
            return -1;
        return 1;
    }
other:
#undef VALUE
    if (PyErr_Occurred()) return -1;
    b->len = mark;
    return 0;
}

/* The cell of child rows lo:hi made by Python: "".join(line(row) for each row). */
static PyObject *cell_by_python(PyObject *line, PyObject *columns, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t k = PyList_GET_SIZE(columns);
    PyObject *lines = PyList_New(hi - lo);
    if (!lines) return NULL;
    for (Py_ssize_t i = lo; i < hi; i++) {
        PyObject *row = PyTuple_New(k);
        if (!row) goto fail;
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *v = PyList_GET_ITEM(PyList_GET_ITEM(columns, j), i);
            Py_INCREF(v);
            PyTuple_SET_ITEM(row, j, v);
        }
        PyObject *text = PyObject_CallOneArg(line, row);
        Py_DECREF(row);
        if (!text) goto fail;
        PyList_SET_ITEM(lines, i - lo, text);
    }
    PyObject *empty = PyUnicode_New(0, 0);
    PyObject *cell = empty ? PyUnicode_Join(empty, lines) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(lines);
    return cell;
fail:
    Py_DECREF(lines);
    return NULL;
}

PyDoc_STRVAR(text_cells_doc,
"text_cells(layout, line, columns, first, lo, hi, present, plain_tasks)\n"
"--\n\n"
"The text cells of a block of a detail sheet (detail_text.TextCells.slice): per cell, the lines\n"
"of its child rows lo[i]:hi[i] joined, or None where present[i] is false. ``columns``: the\n"
"child table's columns (lists) from child row ``first`` on; ``layout``: 0 kernel lines, 1 kernel\n"
"groups, 2 memory blocks; ``line``: the Python line function, which makes the cells holding a\n"
"value of another kind; ``plain_tasks``: the task types a kernel line leaves out.");

static PyObject *text_cells(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (!takes("text_cells", nargs, 8)) return NULL;
    long layout = PyLong_AsLong(args[0]);
    Py_ssize_t first = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    PyObject *line = args[1], *columns = args[2], *lo = args[4], *hi = args[5], *present = args[6], *plain = args[7];
    static const Py_ssize_t needed[] = {5, 4, 5};
    if (layout < 0 || layout > 2 || !PyList_Check(columns) || PyList_GET_SIZE(columns) != needed[layout] ||
        !PyList_Check(lo) || !PyList_Check(hi) || !PyList_Check(present) || !PyTuple_Check(plain) ||
        PyList_GET_SIZE(hi) != PyList_GET_SIZE(lo) || PyList_GET_SIZE(present) != PyList_GET_SIZE(lo)) {
        PyErr_SetString(PyExc_ValueError, "text_cells(): a layout and its columns, lo, hi and present lists of one length");
        return NULL;
    }
    Py_ssize_t rows = PyList_GET_SIZE(PyList_GET_ITEM(columns, 0));
    for (Py_ssize_t j = 0; j < needed[layout]; j++) {
        PyObject *col = PyList_GET_ITEM(columns, j);
        if (!PyList_Check(col) || PyList_GET_SIZE(col) != rows) {
            PyErr_SetString(PyExc_ValueError, "text_cells(): the child columns must be lists of one length");
            return NULL;
        }
    }
    Py_ssize_t cells = PyList_GET_SIZE(lo);
    PyObject *out = PyList_New(cells);
    if (!out) return NULL;
    Buf b = {NULL, 0, 0};
    for (Py_ssize_t c = 0; c < cells; c++) {
        int shown = PyObject_IsTrue(PyList_GET_ITEM(present, c));
        Py_ssize_t a = PyLong_AsSsize_t(PyList_GET_ITEM(lo, c)) - first, z = PyLong_AsSsize_t(PyList_GET_ITEM(hi, c)) - first;
        if (shown < 0 || PyErr_Occurred()) goto fail;
        if (!shown) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, c, Py_None);
            continue;
        }
        if (a < 0 || z > rows || a > z) {
            PyErr_SetString(PyExc_IndexError, "text_cells(): a cell's child rows are outside the columns given");
            goto fail;
        }
        b.len = 0;
        int fast = 1;
        for (Py_ssize_t i = a; i < z && fast; i++) {
            int rc = put_line(&b, (int)layout, columns, i, plain);
            if (rc < 0) goto fail;
            fast = rc;
        }
        PyObject *cell = fast ? PyUnicode_DecodeUTF8(b.data ? b.data : "", b.len, "strict")
                              : cell_by_python(line, columns, a, z);
        if (!cell) goto fail;
        PyList_SET_ITEM(out, c, cell);
    }
    PyMem_Free(b.data);
    return out;
fail:
    PyMem_Free(b.data);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"rows", (PyCFunction)(void (*)(void))rows, METH_FASTCALL, rows_doc},
    {"text_cells", (PyCFunction)(void (*)(void))text_cells, METH_FASTCALL, text_cells_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sheetxml", "Worksheet rows into XML bytes (the workbook writer's optional fast path).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sheetxml(void) {
    init_special();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "INTERFACE", INTERFACE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
