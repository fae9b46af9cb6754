/*
 * protocol.pml - the job / outbox / lease protocol of one slot, as a
 * Promela model checked by spin (model/check.sh; docs/internals/model.md).
 *
 * What is modelled: one slot (one job) with one target, two workers
 * claiming it, a recovery pass that may find the lease expired at any
 * moment (a worker paused or slow past its lease: the lease may expire
 * mid-send), a worker killed at any step (kill -9: nothing committed is
 * lost), a power cut at any step (SQLite: every commit after the last
 * FULL one is forgotten, the store is a prefix of its history, and both
 * workers die), and a send whose outcome may be ambiguous (the receiver
 * may or may not have the copy). The target's on_ambiguous policy
 * (resend or hold) is chosen at the start, so both are checked. With
 * -DPG the store is PostgreSQL: the cut is a server crash, which forgets
 * the async commits after the last durable one but which the workers
 * outlive (their next store call fails, store_pg.md), and a claim is
 * durable.
 *
 * Every `atomic` block that touches `st` is one store transaction, named
 * after the C function that makes it; each says whether it commits FULL
 * (synced: it and everything before it survive a power cut, store.md's
 * durability table) or NORMAL (may be forgotten). Fenced writes commit
 * only while the job is ACTIVE under the writer's lease token
 * (store_fence_set, store.h), as the backends check in the same statement.
 *
 * Invariants (assertions, checked in every transaction that can break
 * them, and at the end):
 *   I1 copies <= 1 + duplicate rows: no second copy reaches the receiver
 *      without a "duplicate" ledger row (outbox.c, declare_duplicate);
 *   I2 never marked and lost: no slot has both its marker and a "lost"
 *      row;
 *   I3 fence: no fenced write (and no fenced finish) commits under a
 *      stale lease: the job must be ACTIVE under the writer's token, and
 *      that claim the writer's own (lease_owner);
 *   I4 at the end (nothing can move any more): the slot is delivered
 *      (DONE, marked, the row SENT, a copy at the receiver), lost (DEAD
 *      with a "lost" row, not marked) or held (lost, the row UNKNOWN,
 *      policy hold). A run that cannot end is an invalid end state.
 *
 * Mutants (-D, one at a time; check.sh expects spin to fail each):
 *   NO_FENCE_SENDING     store_outbox_set_state(SENDING) not fenced
 *   NO_FENCE_COMPLETE    store_job_complete_marked without its token check
 *   SENDING_NOT_DURABLE  store_outbox_set_state(SENDING) committed NORMAL
 *   NO_DUPLICATE_ROW     declare_duplicate writes no row (resend silent)
 *   NO_GIVE_UP           queue_fail never gives up (retry past the budget)
 *   NO_RELEASE_DUPLICATE with OPERATOR: release --resend declares nothing
 *                        (outbox_release without its "duplicate" row)
 *   CLAIM_NOT_DURABLE    with PG: the claim committed async (a server
 *                        crash may forget it and hand its token out
 *                        again while its worker lives)
 *   NO_FENCE_ASSERT      turns I3 off (with a NO_FENCE_* mutant: shows
 *                        which other invariant the missing fence breaks)
 *
 * Options: OPERATOR adds an operator's `release` of a held send (one
 * decision; check.sh runs it without the kill, KILLS=0, for its cost).
 * Without the "duplicate" row of --resend, spin finds a second copy
 * undeclared (docs/internals/model.md, "Finding"). OPERATOR_QUIET lets
 * the operator decide only while no worker is in an attempt.
 * MAXATT, MAXSTALLS, KILLS, CUTS: the bounds (defaults 2, 2, 1, 1).
 */

/* enum job_state (store.h) */
#define READY	0
#define ACTIVE	1
#define DONE	2
#define DEAD	3

/* enum send_state (store.h); ABANDONED is not modelled (one target that
 * is never removed) */
#define S_NONE		0
#define S_PENDING	1
#define S_SENDING	2
#define S_SENT		3
#define S_FAILED	4
#define S_UNKNOWN	5

/* target_send's outcomes */
#define R_OK	0	/* 2xx: the target took it */
#define R_AMB	1	/* ambiguous: may or may not have arrived */
#define R_FAIL	2	/* sure failure: nothing arrived */

#ifndef MAXATT
#define MAXATT	2	/* the retry policy's attempts */
#endif
#ifndef MAXSTALLS
#define MAXSTALLS 2	/* store max_stalls = stall_limit + 1 (stall_limit 1) */
#endif
#ifndef KILLS
#define KILLS	1	/* worker kills (kill -9) in one run */
#endif
#ifndef CUTS
#define CUTS	1	/* power cuts in one run */
#endif

/* The store as every handle sees it (st) and its durable prefix (dur). */
typedef Store {
	byte job;	/* jobs.state */
	byte attempts;	/* jobs.attempts */
	byte maxatt;	/* jobs.max_attempts (grows with a revival) */
	byte stalls;	/* jobs.n_stalls */
	byte token;	/* jobs.lease_token of the latest claim */
	byte owner;	/* jobs.lease_owner: the worker of that claim */
	byte row;	/* the outbox row's send state */
	bool marked;	/* the slot marker */
	byte dups;	/* "duplicate" ledger rows */
	byte lost;	/* "lost" ledger rows */
	byte revived;	/* revivals of the dead job (store_job_revive) */
}
Store st;
Store dur;

#define COPY(d, s) \
	d.job = s.job; d.attempts = s.attempts; d.maxatt = s.maxatt; d.stalls = s.stalls; \
	d.token = s.token; d.owner = s.owner; d.row = s.row; d.marked = s.marked; \
	d.dups = s.dups; d.lost = s.lost; d.revived = s.revived

/* A FULL commit syncs it and every commit before it (store.md, "group
 * sync": the WAL is append-only, so the store is a prefix). NORMAL: no
 * sync; lost to a power cut unless a later FULL commit comes. */
#define FULL	COPY(dur, st)
#define NORMAL	skip

byte copies;		/* copies the receiver holds (outside the store) */
bool hold;		/* the target's on_ambiguous: hold (else resend) */
byte epoch;		/* power cuts so far: a worker of an older epoch died */
byte kills;
bool kill[2];		/* a kill -9 is asked for worker i */
bool busy[2];		/* worker i is in an attempt */
bool broken[2];		/* PG: worker i's connection died with the server */

/* The fence (store.h, store_fence_set): the job is still ACTIVE under
 * the writer's token. */
#define FENCE(t)	(st.job == ACTIVE && st.token == (t))

#ifdef NO_FENCE_SENDING
#define FENCE_SENDING(t)	true
#else
#define FENCE_SENDING(t)	FENCE(t)
#endif
#ifdef NO_FENCE_COMPLETE
#define FENCE_COMPLETE(t)	true
#else
#define FENCE_COMPLETE(t)	FENCE(t)
#endif
#ifdef SENDING_NOT_DURABLE
#define SENDING_COMMIT	NORMAL
#else
#define SENDING_COMMIT	FULL
#endif

#ifdef NO_GIVE_UP
#define GIVE_UP	false
#else
#define GIVE_UP	(st.attempts >= st.maxatt)
#endif
#ifdef NO_DUPLICATE_ROW
#define DECLARE	skip
#else
#define DECLARE	st.dups++
#endif

/* PG: the store is PostgreSQL. Its server crash forgets the async
 * commits after the last durable one (the WAL is one sequence, so a
 * durable commit flushes every earlier one: the same prefix rule), but
 * the workers live on; a claim is durable there (store.md). */
#ifdef PG
#ifdef CLAIM_NOT_DURABLE
#define CLAIM_COMMIT	NORMAL
#else
#define CLAIM_COMMIT	FULL
#endif
#define CUT_KILLS	false
/* After the server crash, a worker's next store call fails on its dead
 * connection (SC_EIO, store_pg.md "Lost connection"), and the run fails
 * there; the call after it reconnects. A finish that fails so is
 * retried (worker.c), so it only reconnects. */
#define EIO	if :: broken[me] -> broken[me] = false; goto fail \
		   :: else -> skip fi
#define RECONNECT	broken[me] = false
#else
#define CLAIM_COMMIT	NORMAL
#define CUT_KILLS	(epoch != my_epoch)
#define EIO	skip
#define RECONNECT	skip
#endif

/* I3, in the fenced writes that a mutant can open (SENDING, the marked
 * completion) and in queue_fail's. */
#ifdef NO_FENCE_ASSERT
#define I3(t)	skip
#else
#define I3(t)	assert(FENCE(t) && st.owner == me)
#endif

/* I1 and I2, after every change of the copies, dups, lost or marker. */
#define I1	assert(copies <= 1 + st.dups)
#define I2	assert(!(st.marked && st.lost > st.revived))

/* A job with no attempt left never waits READY (queue.c's invariant). */
#define CLAIMABLE	(st.job == READY && st.attempts < st.maxatt)

/* store_stall_rule's verdict, in queue_recover's transaction. */
#define STALL_DIES	(st.attempts >= st.maxatt || st.stalls + 1 >= MAXSTALLS)

/*
 * One worker (worker.c, worker_run_job): claims the job, runs the slot
 * under the fence (orchestrator_run_slot, outbox_flush), finishes it.
 * A kill or a power cut ends the attempt at any step (the `unless`).
 */
proctype worker(byte me)
{
	byte t;			/* the lease token of our claim */
	byte my_epoch;
	byte r;			/* a row state read, or a send's result */
	bool permanent;

end_idle:
	do
	:: atomic {
		/* queue_claim (store_job_claim_ahead): READY -> ACTIVE,
		 * attempts + 1, a fresh lease token. NORMAL (PostgreSQL:
		 * durable, store.md). */
		CLAIMABLE ->
		RECONNECT;
		st.job = ACTIVE; st.attempts++; st.token++; t = st.token;
		st.owner = me;
		CLAIM_COMMIT;
		my_epoch = epoch; busy[me] = true; permanent = false
	   };
	   {
		/* orchestrator_run_slot: store_slot_look_others (a read). */
		atomic { EIO; r = st.row;
			if
			:: st.marked -> goto complete_plain
			:: else -> skip
			fi
		};
		if
		:: r != S_NONE -> goto flush	/* RESEND: no task runs */
		:: else -> skip
		fi;
		/* the tasks run: they may fail (then nothing is written) */
		if
		:: goto fail
		:: skip
		fi;
		/* outbox_stage (store_outbox_put): PENDING unless a row
		 * exists. Fenced, NORMAL. */
		atomic {
			EIO;
			if
			:: FENCE(t) ->
				if
				:: st.row == S_NONE -> st.row = S_PENDING
				:: else -> skip
				fi;
				NORMAL
			:: else -> goto fail	/* SC_ELEASE */
			fi
		};
flush:
		/* outbox_flush: store_outbox_mark_unknown, SENDING ->
		 * UNKNOWN (a crashed attempt's row). Fenced, NORMAL. */
		atomic {
			EIO;
			if
			:: FENCE(t) ->
				if
				:: st.row == S_SENDING -> st.row = S_UNKNOWN
				:: else -> skip
				fi;
				NORMAL
			:: else -> goto fail
			fi
		};
		/* store_outbox_get (a read) */
		atomic { EIO; r = st.row };
		if
		:: r == S_SENT -> goto complete_marked	/* guarded */
		:: r == S_UNKNOWN && hold ->
			/* outbox_flush: held, a permanent error */
			permanent = true; goto fail
		:: r == S_UNKNOWN && !hold ->
			/* declare_duplicate (store_ledger_append,
			 * "duplicate"): before the resend. Fenced, NORMAL. */
			atomic {
				EIO;
				if
				:: FENCE(t) -> DECLARE; NORMAL
				:: else -> goto fail
				fi
			}
		:: r == S_PENDING || r == S_FAILED -> skip
		:: else -> goto fail	/* SC_ESTATE */
		fi;
		/* send_one: store_outbox_set_state(SENDING), the lease
		 * check right before the send. Fenced, FULL. A SENT row
		 * never reopens (SC_ESTATE). */
		atomic {
			EIO;
			if
			:: FENCE_SENDING(t) && st.row != S_SENT ->
				I3(t);
				st.row = S_SENDING; SENDING_COMMIT
			:: else -> goto fail
			fi
		};
		/* target_send: the receiver takes the copy or not; the
		 * answer may not tell (ambiguous). */
		atomic {
			if
			:: copies++; r = R_OK
			:: copies++; r = R_AMB
			:: r = R_AMB
			:: r = R_FAIL
			fi;
			I1
		};
		if
		:: r == R_OK ->
			/* send_one: store_outbox_set_state(SENT), the guard.
			 * Fenced, FULL; refused, the row stays SENDING. */
			atomic {
				EIO;
				if
				:: FENCE(t) && st.row != S_SENT ->
					st.row = S_SENT; FULL
				:: else -> goto fail
				fi
			};
			goto complete_marked
		:: else ->
			/* send_one: store_outbox_set_state(UNKNOWN or
			 * FAILED); a refusal is only logged. Fenced,
			 * NORMAL. */
			atomic {
				RECONNECT;	/* a failure only logged */
				if
				:: FENCE(t) && st.row != S_SENT ->
					st.row = (r == R_AMB -> S_UNKNOWN :
						  S_FAILED);
					NORMAL
				:: else -> skip
				fi
			};
			if
			:: r == R_AMB && hold -> permanent = true
			:: else -> skip
			fi;
			goto fail
		fi;
complete_marked:
		/* queue_complete_marked (store_job_complete_marked): DONE
		 * and the slot marker in one commit, fenced by the token.
		 * FULL. */
		atomic {
			RECONNECT;
			if
			:: FENCE_COMPLETE(t) ->
				I3(t);
				st.job = DONE; st.marked = true; FULL; I2
			:: else -> skip	/* SC_ELEASE: the new owner decides */
			fi
		};
		goto done;
complete_plain:
		/* the slot was marked already: queue_complete
		 * (store_job_finish DONE), fenced by the token. NORMAL. */
		atomic {
			RECONNECT;
			if
			:: FENCE(t) -> st.job = DONE; NORMAL
			:: else -> skip
			fi
		};
		goto done;
fail:
		/* queue_fail (store_job_finish), fenced by the token:
		 * READY for a retry (NORMAL), or DEAD with a "lost" row
		 * when no attempt is left or the error is permanent
		 * (FULL). A refusal (SC_ELEASE) writes nothing. */
		atomic {
			RECONNECT;
			if
			:: FENCE(t) ->
				I3(t);
				if
				:: permanent || GIVE_UP ->
					st.job = DEAD; st.lost++;
					FULL; I2
				:: else ->
					st.job = READY; NORMAL
				fi
			:: else -> skip
			fi
		};
done:
		skip
	   } unless { kill[me] || CUT_KILLS };
	   /* the attempt ended, or the worker died: a new process (or
	    * the same one) takes work again. */
	   atomic {
		if
		:: kill[me] -> kill[me] = false
		:: else -> skip
		fi;
		busy[me] = false
	   }
	od
}

/*
 * queue_recover (store_job_recover): an ACTIVE job whose lease expired
 * gets a "stalled" row and becomes READY, or DEAD with a "lost" row by
 * store_stall_rule. Any node may run it at any time: the lease may
 * expire whenever the holder missed its heartbeats (paused, slow, in a
 * long send). FULL.
 */
active proctype recover()
{
end_recover:
	do
	:: atomic {
		st.job == ACTIVE ->
		if
		:: STALL_DIES -> st.job = DEAD; st.lost++
		:: else -> st.job = READY
		fi;
		st.stalls++;
		FULL; I2
	   }
	od
}

/* kill -9 of a worker in an attempt, at any step: it loses nothing
 * committed (a process crash), and its lease is left to expire. */
active proctype killer()
{
end_killer:
	do
	:: atomic { kills < KILLS && busy[0] && !kill[0] ->
		kill[0] = true; kills++ }
	:: atomic { kills < KILLS && busy[1] && !kill[1] ->
		kill[1] = true; kills++ }
	od
}

/* A power cut at any step (SQLite, synchronous NORMAL with FULL
 * commits synced, store.md): the store goes back to its last FULL
 * commit, every worker dies; the receiver keeps what it got. With PG, a
 * server crash: the store goes back to its last durable commit, the
 * workers live on and find their connection dead. */
active proctype power()
{
end_power:
	do
	:: atomic { epoch < CUTS -> COPY(st, dur); epoch++;
#ifdef PG
		broken[0] = true; broken[1] = true;
#endif
		I1; I2 }
	od
}

#ifdef OPERATOR
/*
 * An operator's decision on a held send, once (release.c,
 * release_decide): outbox_release moves an UNKNOWN row to SENT
 * (--arrived), or declares the resend (a "duplicate" row) and moves it
 * to FAILED (--resend), unfenced (the command holds no lease); the
 * "decision" ledger row; then queue_retry_dead revives a DEAD job with a
 * fresh budget. The operator is truthful: --arrived exactly when the
 * receiver holds a copy at the moment of the decision. A copy sent
 * before the decision can still land after it (a worker paused past its
 * lease with its SENDING committed, docs/internals/model.md "Finding"):
 * the declaration covers it.
 */
#ifdef NO_RELEASE_DUPLICATE
#define RELEASE_DECLARE	skip	/* the mutant: --resend declares nothing */
#else
#define RELEASE_DECLARE	st.dups++
#endif
/* The command died with a power cut, or lost its connection to the
 * crashed server (its next call fails, it exits 1): it goes no further. */
#define OP_GONE	(epoch != my_epoch)
/* OPERATOR_QUIET: and no attempt of a worker is still under way, so no
 * request can be on its way. */
#ifdef OPERATOR_QUIET
#define QUIET	(!busy[0] && !busy[1])
#else
#define QUIET	true
#endif

proctype operator()
{
	bool arrived;
	byte my_epoch;

end_operator:	/* it may never be needed */
	atomic {
		/* outbox_release: its read (store_outbox_get: UNKNOWN,
		 * else SC_ESTATE and nothing written), then --arrived:
		 * store_outbox_release(SENT), only from UNKNOWN (in the
		 * write), FULL; --resend:
		 * declare_duplicate (store_ledger_append, "duplicate"),
		 * NORMAL: a send made before the decision may still land
		 * (a paused worker's), so the resend is declared before
		 * the row can be sent again. The command is for a held
		 * slot: the job DEAD. */
		st.row == S_UNKNOWN && st.job == DEAD && QUIET ->
		my_epoch = epoch;
		arrived = copies > 0;
		if
		:: arrived -> st.row = S_SENT; FULL
		:: else -> RELEASE_DECLARE; NORMAL
		fi
	};
	/* --resend: store_outbox_release(FAILED), after the row above.
	 * NORMAL. Only from UNKNOWN, checked in the write: a row changed
	 * since the read (SENT, SENDING, ...) is left as it is (the
	 * release fails; its declaration stays). */
	atomic {
		if
		:: OP_GONE -> goto gone
		:: !OP_GONE && !arrived && st.row == S_UNKNOWN ->
			st.row = S_FAILED; NORMAL
		:: !OP_GONE && (arrived || st.row != S_UNKNOWN) -> skip
		fi
	};
	/* record_decision (store_ledger_append, "decision"): no state
	 * of the model. queue_retry_dead (store_job_revive): DEAD ->
	 * READY, max_attempts = attempts + the policy's. NORMAL. */
	atomic {
		if
		:: OP_GONE -> goto gone
		:: !OP_GONE && st.job == DEAD ->
			st.job = READY; st.maxatt = st.attempts + MAXATT;
			st.revived++;
			NORMAL
		:: !OP_GONE && st.job != DEAD -> skip
		fi
	};
gone:
	skip
}
#endif

/* I4's three ends. */
#define DELIVERED \
	(st.job == DONE && st.marked && st.row == S_SENT && copies >= 1)
#define LOST	(st.job == DEAD && st.lost > st.revived && !st.marked)
#define HELD	(LOST && st.row == S_UNKNOWN && hold)

init
{
	atomic {
		/* the slot enqueued (queue_enqueue) and synced */
		st.job = READY; st.maxatt = MAXATT;
		if
		:: hold = true
		:: hold = false
		fi;
		COPY(dur, st);
		run worker(0);
		run worker(1)
#ifdef OPERATOR
		; run operator()
#endif
	};
	/* I4: nothing else can move: the slot ended delivered, lost or
	 * held. */
	timeout ->
	assert(DELIVERED || LOST || HELD)
}
