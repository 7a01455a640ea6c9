/* base/sl_err.h: sluice's one error space.
 *
 * Every fallible function in sluice returns an sl_err_t (SL_OK == 0). Foreign
 * codes (errno, LMDB, msgpack, OpenSSL) are converted at the module edge, where
 * the detail is logged; callers only ever see these. */
#ifndef SL_ERR_H
#define SL_ERR_H

#define SL_ERR_MAP(X)                                                          \
    X(OK,          "success")                                                  \
    X(INVALID,     "invalid argument")                                         \
    X(PARSE,       "malformed input")                                          \
    X(TRUNCATED,   "input ends too early")                                     \
    X(TOO_LARGE,   "input too large")                                          \
    X(TOO_DEEP,    "input nested too deeply")                                  \
    X(RANGE,       "value out of range")                                       \
    X(NOT_FOUND,   "not found")                                                \
    X(EXISTS,      "already exists")                                           \
    X(IO,          "I/O error")                                                \
    X(CONFIG,      "configuration error")                                      \
    X(STATE,       "shared state error")                                       \
    X(MAP_FULL,    "shared state map is full")                                 \
    X(CORRUPT,     "corrupt record")                                           \
    X(VERSION,     "unsupported record version")                               \
    X(BUSY,        "resource busy")                                            \
    X(DENIED,      "permission denied")

typedef enum sl_err {
#define SL_ERR_ENUM_(name, msg) SL_ERR_##name,
    SL_ERR_MAP(SL_ERR_ENUM_)
#undef SL_ERR_ENUM_
    SL_ERR_COUNT
} sl_err_t;

#define SL_OK SL_ERR_OK

/* Fallible functions carry this so that an ignored error is a compile error. */
#define SL_MUST_CHECK __attribute__((warn_unused_result))

/* Returns the fixed message of an error ("unknown error" outside the map). */
const char *sl_err_str(sl_err_t err);

/* Returns the symbolic name ("TOO_LARGE"); for logs and tests. */
const char *sl_err_name(sl_err_t err);

#endif
