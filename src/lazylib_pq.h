/*
 * lazylib_pq.h - libpq through the lazily loaded table (see lazylib.h).
 * Include this instead of <libpq-fe.h>; call dl_pq_load first.
 * The store uses libpq's asynchronous calls only (store_pg.c: every wait
 * bounded), so the synchronous PQexec family is not in the table.
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
	X(PQexitPipelineMode)                                               \
	X(PQfinish)                                                         \
	X(PQflush)                                                          \
	X(PQfreemem)                                                        \
	X(PQgetisnull)                                                      \
	X(PQgetResult)                                                      \
	X(PQgetvalue)                                                       \
	X(PQisBusy)                                                         \
	X(PQnotifies)                                                       \
	X(PQntuples)                                                        \
	X(PQpipelineSync)                                                   \
	X(PQresultErrorField)                                               \
	X(PQresultErrorMessage)                                             \
	X(PQresultStatus)                                                   \
	X(PQsendPrepare)                                                    \
	X(PQsendQuery)                                                      \
	X(PQsendQueryParams)                                                \
	X(PQsendQueryPrepared)                                              \
	X(PQsetnonblocking)                                                 \
	X(PQsetNoticeProcessor)                                             \
	X(PQsocket)                                                         \
	X(PQstatus)                                                         \
	X(PQtransactionStatus)

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
#define PQexitPipelineMode (dl_pq.PQexitPipelineMode)
#define PQfinish (dl_pq.PQfinish)
#define PQflush (dl_pq.PQflush)
#define PQfreemem (dl_pq.PQfreemem)
#define PQgetisnull (dl_pq.PQgetisnull)
#define PQgetResult (dl_pq.PQgetResult)
#define PQgetvalue (dl_pq.PQgetvalue)
#define PQisBusy (dl_pq.PQisBusy)
#define PQnotifies (dl_pq.PQnotifies)
#define PQntuples (dl_pq.PQntuples)
#define PQpipelineSync (dl_pq.PQpipelineSync)
#define PQresultErrorField (dl_pq.PQresultErrorField)
#define PQresultErrorMessage (dl_pq.PQresultErrorMessage)
#define PQresultStatus (dl_pq.PQresultStatus)
#define PQsendPrepare (dl_pq.PQsendPrepare)
#define PQsendQuery (dl_pq.PQsendQuery)
#define PQsendQueryParams (dl_pq.PQsendQueryParams)
#define PQsendQueryPrepared (dl_pq.PQsendQueryPrepared)
#define PQsetnonblocking (dl_pq.PQsetnonblocking)
#define PQsetNoticeProcessor (dl_pq.PQsetNoticeProcessor)
#define PQsocket (dl_pq.PQsocket)
#define PQstatus (dl_pq.PQstatus)
#define PQtransactionStatus (dl_pq.PQtransactionStatus)
#endif

#endif
