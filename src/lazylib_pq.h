/*
 * lazylib_pq.h - libpq through the lazily loaded table (see lazylib.h).
 * Include this instead of <libpq-fe.h>; call dl_pq_load first.
 */
#ifndef SURECRON_LAZYLIB_PQ_H
#define SURECRON_LAZYLIB_PQ_H

#include <libpq-fe.h>

#include "lazylib.h"

/* Every libpq function the library calls; add a row to use another. */
#define DL_PQ_FUNCS(X)                                                      \
	X(PQclear)                                                          \
	X(PQcmdTuples)                                                      \
	X(PQconnectdbParams)                                                \
	X(PQconninfoFree)                                                   \
	X(PQconninfoParse)                                                  \
	X(PQconsumeInput)                                                   \
	X(PQenterPipelineMode)                                              \
	X(PQerrorMessage)                                                   \
	X(PQexec)                                                           \
	X(PQexecParams)                                                     \
	X(PQexecPrepared)                                                   \
	X(PQexitPipelineMode)                                               \
	X(PQfinish)                                                         \
	X(PQfreemem)                                                        \
	X(PQgetResult)                                                      \
	X(PQgetisnull)                                                      \
	X(PQgetvalue)                                                       \
	X(PQnotifies)                                                       \
	X(PQntuples)                                                        \
	X(PQpipelineSync)                                                   \
	X(PQprepare)                                                        \
	X(PQresultErrorField)                                               \
	X(PQresultErrorMessage)                                             \
	X(PQresultStatus)                                                   \
	X(PQsendQueryParams)                                                \
	X(PQsendQueryPrepared)                                              \
	X(PQsetNoticeProcessor)                                             \
	X(PQsocket)                                                         \
	X(PQstatus)

struct dl_pq_table {
#define DL_PQ_SLOT(f) __typeof__(f) *f;
	DL_PQ_FUNCS(DL_PQ_SLOT)
#undef DL_PQ_SLOT
};

/* Filled once by dl_pq_load; read-only afterwards. */
extern struct dl_pq_table dl_pq;

#ifndef LAZYLIB_IMPL
#define PQclear (dl_pq.PQclear)
#define PQcmdTuples (dl_pq.PQcmdTuples)
#define PQconnectdbParams (dl_pq.PQconnectdbParams)
#define PQconninfoFree (dl_pq.PQconninfoFree)
#define PQconninfoParse (dl_pq.PQconninfoParse)
#define PQconsumeInput (dl_pq.PQconsumeInput)
#define PQenterPipelineMode (dl_pq.PQenterPipelineMode)
#define PQerrorMessage (dl_pq.PQerrorMessage)
#define PQexec (dl_pq.PQexec)
#define PQexecParams (dl_pq.PQexecParams)
#define PQexecPrepared (dl_pq.PQexecPrepared)
#define PQexitPipelineMode (dl_pq.PQexitPipelineMode)
#define PQfinish (dl_pq.PQfinish)
#define PQfreemem (dl_pq.PQfreemem)
#define PQgetResult (dl_pq.PQgetResult)
#define PQgetisnull (dl_pq.PQgetisnull)
#define PQgetvalue (dl_pq.PQgetvalue)
#define PQnotifies (dl_pq.PQnotifies)
#define PQntuples (dl_pq.PQntuples)
#define PQpipelineSync (dl_pq.PQpipelineSync)
#define PQprepare (dl_pq.PQprepare)
#define PQresultErrorField (dl_pq.PQresultErrorField)
#define PQresultErrorMessage (dl_pq.PQresultErrorMessage)
#define PQresultStatus (dl_pq.PQresultStatus)
#define PQsendQueryParams (dl_pq.PQsendQueryParams)
#define PQsendQueryPrepared (dl_pq.PQsendQueryPrepared)
#define PQsetNoticeProcessor (dl_pq.PQsetNoticeProcessor)
#define PQsocket (dl_pq.PQsocket)
#define PQstatus (dl_pq.PQstatus)
#endif

#endif
