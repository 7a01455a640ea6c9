#include "base/sl_err.h"

static const char *const messages[SL_ERR_COUNT] = {
#define SL_ERR_MSG_(name, msg) [SL_ERR_##name] = msg,
    SL_ERR_MAP(SL_ERR_MSG_)
#undef SL_ERR_MSG_
};

static const char *const names[SL_ERR_COUNT] = {
#define SL_ERR_NAME_(name, msg) [SL_ERR_##name] = #name,
    SL_ERR_MAP(SL_ERR_NAME_)
#undef SL_ERR_NAME_
};

const char *sl_err_str(sl_err_t err)
{
    if ((unsigned)err >= SL_ERR_COUNT)
        return "unknown error";
    return messages[err];
}

const char *sl_err_name(sl_err_t err)
{
    if ((unsigned)err >= SL_ERR_COUNT)
        return "UNKNOWN";
    return names[err];
}
