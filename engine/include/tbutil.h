/*
 * tbutil.h — three macros every layer of ternbench uses (the engine, the
 * harness, the store, the report). Not part of the library's API proper;
 * installed beside ternbench.h so the layers above it need no private
 * engine header.
 */
#ifndef TB_TBUTIL_H
#define TB_TBUTIL_H

#define TB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TB_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
