-- Deploy pepsi:comments to pg
-- requires: schema
-- requires: workqueue
-- requires: topology
-- requires: tubes
-- requires: workqueue_body_gc
-- requires: stats
-- requires: workqueue_inject
-- requires: stage_pause
-- requires: workqueue_claim
-- requires: workqueue_history
-- requires: workqueue_results
-- requires: workqueue_dispatch_ops
-- requires: workqueue_resume
-- requires: workqueue_delete
-- requires: control_signal
-- requires: schema_check
-- requires: views
-- requires: workqueue_host_error
-- requires: workqueue_commit
-- requires: settings
-- requires: workqueue_split
-- requires: workqueue_move
-- requires: user_address
-- requires: settings_apply
-- requires: webhook_provider
-- requires: webhook_events
-- requires: webhook_ingest
-- requires: webhook_pull
-- requires: workqueue_claim_fair
-- requires: sender_backlog
-- requires: webhook_tombstones
-- requires: webhook_gaps
-- requires: webhook_backfill
-- requires: reconcile
-- requires: anomaly_checks
-- requires: anomaly_dashboard
-- requires: config_keys
-- requires: config_override
-- requires: workqueue_operator
--
-- COMMENT ON every function, view, table and column a DBA reads (issue 15):
-- `\df+ pepsi.*`, `\dv+`, `\d+ pepsi.messages` in psql show what each one
-- does, who calls it, what it refuses (PX codes: README "Error codes") and
-- what it writes. A change of its own, not edits of the old deploy files,
-- so that databases already deployed receive the comments on upgrade.
--
-- Only objects that had no comment get one here: comments an older deploy
-- file set stay as they are, so revert/comments.sql sets exactly these
-- back to NULL. Partitions of pepsi.workqueue_history are made at run
-- time and need none.
--
-- Functions, views, tables and columns created by LATER changes carry
-- their own COMMENT ON in their own deploy file, next to the CREATE:
-- pgtap/59-comments.sql finds every object without one and fails.

begin;

-- ---- functions: schema, workqueue (helpers granted to no role run inside
-- pepsi's security-definer functions, as the schema owner) ----

comment on function pepsi.lock_key(text, integer) is
    'Internal: the two int4 keys (class_id, the same "peps" class for every lock; object_id) of a pepsi advisory lock, for pg_[try_]advisory_[xact_]lock and for reading pg_locks: ''dispatcher'' (object = owner slot), ''reconcile'' (-1), ''anomaly_evaluate'' (-2), ''anomaly_refresh'' (-10 - n). An unknown name is XX000.';
comment on function pepsi.stage_name_valid(text) is
    'Whether a text is a stage name: 1 to 63 ASCII letters, digits, _ . -, starting with a letter or digit (NULL for NULL). The one copy of the rule behind the domain pepsi.stage_name, pepsi.stage_check (PX001) and the CHECK constraints. Internal, granted to no role.';
comment on function pepsi.tube_name_valid(text) is
    'Whether a text is a tube name (beanstalkd''s rule): 1 to 200 bytes of letters, digits and - + / ; . $ _ ( ), not starting with -, exact bytes (NULL for NULL). The rule behind the domain pepsi.tube_name and pepsi.tube_check (PX006). Internal.';
comment on function pepsi.input_limits() is
    'The input limits in one place (README "Limits"): one row per limited field with its maximum, unit (bytes, entries, seconds), the SQLSTATE a value over it gets (PX001, PX003, PX006, PX012) and why. Every writer checks against it before writing; for the schema owner and DBAs.';
comment on function pepsi.input_limit(text) is
    'Internal: the maximum of one field of pepsi.input_limits() (e.g. input_limit(''body'') = 67108864 bytes); an unknown field is a programming error (XX000), never "no limit".';
comment on function pepsi.excerpt(text) is
    'Internal: at most the first 64 characters of a value, for error messages (''<null>'' for NULL), so that an error never echoes a huge argument into the client or the server log.';
comment on function pepsi.size_error(text, text, bigint, text) is
    'Internal: raises PX003 when a size is over the field''s limit, naming the field, its size and the limit ("message 3: subject is 204800 bytes; the limit is 998"); NULL sizes pass.';
comment on function pepsi.stage_check(text, text) is
    'Internal validator: returns the stage name when valid (pepsi.stage_name_valid), else raises PX001; p_where prefixes the message ("message 3").';
comment on function pepsi.address_check(text, text) is
    'Internal validator: returns the address when it looks like local@domain within RFC 5321''s lengths (254 bytes, local part 64), else raises PX003 (too long) or PX002 (not an address); p_what names the argument.';
comment on function pepsi.tube_check(text, text) is
    'Internal validator: returns the tube name when valid (pepsi.tube_name_valid), else raises PX006; p_where prefixes the message.';
comment on function pepsi.state_count(jsonb) is
    'Internal: a count kept in a message''s state (strikes, hops): a JSON number or string of 1 to 9 digits, else NULL, so that a producer''s odd value reads as absent instead of a cast error.';
comment on function pepsi.state_flag(jsonb) is
    'Internal: a flag kept in a message''s state (list_copy): true for JSON true or a string PostgreSQL reads as true, false for anything else.';
comment on function pepsi.time_or_null(text) is
    'Internal: a text read as timestamptz, or NULL when it is NULL or not a time (state.generated_at, an event''s received_at); a string without an offset is read in the session''s TimeZone.';
comment on function pepsi.reason_clip(text) is
    'Internal: a pause or failure reason cut to input_limit(''reason'') = 4096 bytes, ending in "..." when cut, never splitting a character: a failure must always be recordable, so a long reason is cut, never refused.';
comment on function pepsi.domain_of(text) is
    'Internal: the lower-cased domain of an address ('''' when it has none), for sender keys.';
comment on function pepsi.peer_key_of(inet) is
    'Internal: the fairness identity of an SMTP peer (D-45): an IPv4 address as is (also when IPv4-mapped IPv6), an IPv6 address as its /64 network.';
comment on function pepsi.sender_key_of(text, inet, text, text[]) is
    'The expression of the generated column workqueue.sender_key: whom fair scheduling charges a message to, first match wins: user:<origin_user>, ip:<peer> (/64 for IPv6), null:<first recipient''s domain> for the null sender, from:<envelope sender''s domain>. Immutable; internal.';
comment on function pepsi.workqueue_release_due(timestamp with time zone, integer) is
    'Internal (workqueue_release_paused and the claims'' p_release_paused): every paused row of owner slot p_owner_slot whose timeout is at or before p_now becomes pending, its timeout cleared; returns how many. One range scan of workqueue_paused_idx.';

-- ---- topology and tubes ----

comment on function pepsi.topology_fingerprint_of(text, integer, integer[]) is
    'Internal: the fingerprint of a topology (T-08): lowercase hex SHA-256 of "<hash>;<count>;<slot of partition 0>,<slot of 1>,...".';
comment on function pepsi.topology_read() is
    'Internal: the stored topology (count, hash, version, fingerprint, map), checked: all NULL when there is none; raises PX041 when it is there in part or damaged (a map without its row, a row without its map, a map of another size, a fingerprint that does not match).';
comment on function pepsi.topology_fingerprint() is
    'pepsi_runner and pepsi_reader: the fingerprint of the stored topology, which a runner''s TOPOLOGY_FINGERPRINT must match; NULL when there is none. Raises PX041 when the topology is damaged. Writes nothing.';
comment on function pepsi.topology_check(integer) is
    'pepsi_runner at start (and pepsi_reader): the stored topology and how many and which partitions owner slot p_owner_slot owns (ascending), which the runner passes to its claims. No row without a topology; PX041 when it is damaged. Writes nothing.';
comment on function pepsi.topology_write(text, integer, integer[], integer, text, integer[]) is
    'Internal (topology_set, partition_map_set): writes a new topology over the old one and returns its fingerprint; try-locks the dispatcher lock of every owner slot whose partitions change (PX042 when a runner holds one) and gives the rows of moved partitions their new owner_slot. Writes nothing when nothing changes.';
comment on function pepsi.topology_map_check(integer[], integer) is
    'Internal: raises PX003 unless a partition map names an owner slot (0 or more) for each of the partitions, in partition order.';
comment on function pepsi.topology_set(integer, integer, text) is
    'Schema owner (operators; runners of the affected slots stopped): sets the topology to p_partition_count partitions (1 to 65536) of hash fnv1a64 split into p_slots contiguous owner slots, and returns its fingerprint. Refuses PX003 (out of range), PX040 (messages present and the count, hash or map would change: use partition_map_set), PX041 (damaged metadata), PX042 (an affected slot''s runner is running); may rewrite partition and owner_slot of queued rows.';
comment on function pepsi.partition_map_set(integer[]) is
    'Schema owner (operators): moves partitions between owner slots, with or without messages: p_map[i] is the owner slot of partition i - 1; the rows of moved partitions go to their new slot, and returns the new fingerprint. Refuses PX003 (not one slot per partition), PX041 (no topology, or damaged), PX042 (the runner of an old or new owner slot is running: stop it first).';
comment on function pepsi.tube_pause_current(timestamp with time zone, boolean) is
    'Internal (the claims): the tubes paused at p_now, or NULL when none is; with p_sweep (the dispatcher''s heartbeat) expired rows of pepsi.tube_pause are deleted first.';
comment on function pepsi.tube_locate(text) is
    'pepsi_reader and pepsi_runner: where a tube lives, its partition under the stored topology and that partition''s owner slot (0 and 0 without a topology); computed from the name alone, so a tube that comes back lands where it was. Writes nothing.';
comment on function pepsi.tube_stats(text, timestamp with time zone) is
    'pepsi_reader and pepsi_runner: beanstalkd''s stats-tube for one tube: ready (pending), reserved (running), delayed (paused), buried (failed and timeout) and total rows, pause and pause_time_left in seconds, partition and owner slot. Refuses PX006 (invalid name), PX043 (no such tube: no row, no pause, not default), PX003 (NULL p_now); writes nothing, never creates a tube.';
comment on function pepsi.tube_pause(text, integer, timestamp with time zone) is
    'pepsi_runner and pepsi_operator: beanstalkd''s pause-tube: no row of the tube is claimed until p_now + p_seconds, which it returns; 0 ends a pause at once (returns NULL) and notifies the workqueue channel. Sweeps expired pauses first. Refuses PX006 (invalid name), PX003 (seconds NULL, negative or over a year), PX043 (no such tube): a pause never creates a tube.';

-- ---- bodies, statistics, the published stage graph ----

comment on function pepsi.workqueue_body_release() is
    'Trigger function of the statement trigger after DELETE on pepsi.workqueue: deletes each body the deleted rows referred to that no remaining row refers to (split siblings share one). Races leave orphans for workqueue_body_gc.';
comment on function pepsi.workqueue_body_gc(integer, timestamp with time zone) is
    'pepsi_runner (the dispatcher''s maintenance): deletes up to p_limit (default 10000) bodies no workqueue row refers to and older than a minute; returns how many. Refuses PX003 (NULL or negative limit, NULL p_now).';
comment on function pepsi.stats_flush(integer, jsonb, jsonb, timestamp with time zone) is
    'pepsi_runner: adds a batch of counter deltas to pepsi.stage_stats (per stage and owner slot) and pepsi.dispatch_stats, in the caller''s transaction. Refuses PX001 (a stage name), PX003 (bad owner slot, not an array of objects or an object, a delta that is not a count of 0 to 15 digits, NULL p_now).';
comment on function pepsi.stage_served_publish(integer, jsonb) is
    'pepsi_runner, at start-up and every reload: replaces owner slot p_owner_slot''s published stage graph in pepsi.stage_served by p_stages (stage, served, in_file, program, refs); returns how many stages. Refuses PX003 (slot, shape), PX001 (a stage name).';
comment on function pepsi.stage_served_live() is
    'pepsi_reader and pepsi_runner: the published stages (pepsi.stage_served) whose owner slot''s dispatcher holds its advisory lock now: the stages a running dispatcher serves. Writes nothing.';

-- ---- inject ----

comment on function pepsi.workqueue_item_check(pepsi.workqueue_item, text) is
    'Internal validator of one message before it is written (inject, inject_batch): raises the first problem: PX003 (a field over its limit, state not an object, NULL arrived_at), PX001 (stage), PX006 (tube), PX002 (an address that is not local@domain); p_where names the message in a batch.';
comment on function pepsi.workqueue_create(pepsi.workqueue_item[], bigint[]) is
    'Internal: the one place a message row is created (inject, inject_batch, split, the webhook ingest, reconciliation''s re-inject): inserts the items pending, with their bodies (or shared body ids) and the partition and owner slot of their tube under the stored topology; returns the new ids in input order. Checks nothing and sends no NOTIFY: the caller does.';
comment on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamp with time zone) is
    'pepsi_ingress and pepsi_worker (applications, stages that generate messages): queues one message pending at p_stage (body and header block stored once in workqueue_body), NOTIFY workqueue, and returns its workqueue_id. Every field is checked against pepsi.input_limits before anything is written: PX001 (stage), PX002 (address), PX003 (a limit, a NULL arrival or other bad argument), PX006 (tube).';
comment on function pepsi.workqueue_batch_casts(jsonb) is
    'Internal slow path of workqueue_inject_batch, run after a cast failed: raises PX003 naming the first element whose origin_addr is not an IP address or whose body_base64 is not base64.';
comment on function pepsi.workqueue_inject_batch(jsonb) is
    'pepsi_ingress and pepsi_worker: queues a JSON array of at most 10000 messages (the keys of workqueue_inject without p_, body or body_base64) in one statement and one NOTIFY; returns their ids in input order. All or nothing: the first bad element refuses the batch, named ("message 3: ..."): PX001, PX002, PX003, PX006.';

-- ---- claims ----

comment on function pepsi.stage_pause_caps(text[], integer[]) is
    'Internal (the claims): the caps with 0 for every stage that pepsi.stage_pause names (a paused stage is not claimed), the others unchanged.';
comment on function pepsi.claim_incarnation() is
    'pepsi_runner, at dispatcher start: a number no dispatcher had before (a sequence); claim ids are incarnation * 2^40 + n, so a claim id is known before the claim is sent and unique across restarts.';
comment on function pepsi.workqueue_claim(text[], integer[], timestamp with time zone, boolean, bigint, integer) is
    'pepsi_runner (the dispatcher of owner slot p_owner_slot): the plain oldest-first claim: per stage, up to its cap of the slot''s oldest pending rows become running in one UPDATE, with claimed_at p_now and claim_id p_claim_id; paused tubes and paused stages are skipped; with p_release_paused due paused rows are released first. Returns (workqueue_id, stage, sender_key). Refuses PX003 (arrays of different lengths, a cap NULL or negative, a stage NULL or listed twice, p_now or p_owner_slot NULL).';
comment on function pepsi.workqueue_sender_probe(text, text, text, integer, integer, text[]) is
    'Internal, inlined into workqueue_claim_fair: one probe of the fair claim''s sender window, reading the next pending entries of a stage and owner slot after a sender in (sender_key, workqueue_id) order, skipping paused tubes.';
comment on function pepsi.workqueue_claim_fair(text[], integer[], double precision[], text[], text[], double precision[], integer, text[], integer[], timestamp with time zone, boolean, integer, bigint, double precision[], double precision[], boolean[], integer) is
    'pepsi_runner (the dispatcher with fair scheduling): like workqueue_claim, but per stage the rows are chosen from a window of up to p_window_size senders ranked lead + k x average (CFS-like), after a FIFO share of p_fifo_percent; leads sent with a claim id are kept in pepsi.fair_lead and fair_stage. Returns the claimed rows with fifo, window_next, window_lap, fifo_credit, lead_floor and leads_lost for the next call. Refuses PX003 (arrays of different lengths, values out of range, a stage twice, p_now or p_owner_slot NULL).';

-- ---- history ----

comment on function pepsi.workqueue_history_on() is
    'Internal, inlined into the writers of pepsi.workqueue_history: true unless the history is off (workqueue_history_settings.retention 0).';

-- ---- results: the state machine and its wrappers ----

comment on function pepsi.workqueue_refuse(bigint, text) is
    'Internal: raises why a result for message p_id at stage p_stage matched no row: PX004 (unknown id: finished or never queued) or PX005 (not running at that stage).';
comment on function pepsi.state_patch_check(jsonb) is
    'Internal: returns a state patch when it is NULL or a JSON object of at most input_limit(''state'') = 1 MiB, else raises PX003.';
comment on function pepsi.workqueue_hop_refuse(text[], integer) is
    'Internal slow path of workqueue_hop_check: raises PX003 (p_max_hops not 1 to 100,000,000, more than 64 stages in p_via) or PX001 (an element of p_via that is not a stage name), else returns true.';
comment on function pepsi.workqueue_hop_check(text[], integer) is
    'Internal: checks the arguments of a hop before any row is touched (p_max_hops 1 to 100,000,000; p_via NULL or at most 64 stage names); returns true or raises PX003/PX001. Inlined into its callers.';
comment on function pepsi.workqueue_hop_slow(jsonb, jsonb, text, text[], text, integer, integer) is
    'Internal, the rare branch of workqueue_hop: the state of a message within 8 hops of MAX_HOPS or past it; keeps state.hop_path (the last 8 stages) and, past the limit, fails the message as a loop (failure_class loop, last_error naming count, limit and path) at the stage where the refused hop starts.';
comment on function pepsi.workqueue_hop(jsonb, jsonb, text, text[], text, pepsi.workqueue_status, integer) is
    'Internal: the hop rule, written once: the stage, status and state of a row moved from p_stage through the fused stages p_via to p_next: state.hops counted (1 + cardinality(p_via)), p_patch merged, state.strikes cleared; past p_max_hops failed as a ''loop'' instead. Inlined into workqueue_transition.';
comment on function pepsi.transition_paused_state(jsonb, jsonb, text) is
    'Internal: the state of a message a stage paused: the patch merged, the reason (when given) kept as state.pause_reason.';
comment on function pepsi.transition_failed_state(jsonb, jsonb, text, text, text) is
    'Internal: the state of a message a stage failed: the patch merged, state.last_error, failed_stage and failure_class (default permanent).';
comment on function pepsi.transition_of(bigint, text, text, text, text, text[], jsonb, timestamp with time zone, text, text, text, interval, text, bigint) is
    'Internal: builds one pepsi.transition by name (id, stage, do, at, next, via, state, until, reason, class, kind, lifetime, bounce, claim id): how the wrappers call workqueue_transition.';
comment on function pepsi.workqueue_transition(pepsi.transition[], integer, timestamp with time zone) is
    'Internal, granted to no role: the state machine of running messages, the one place a running row changes status: advance, move, finish (deletes the row, writes its workqueue_history row), pause, fail, host_error, strike, requeue, defer, in one UPDATE and one DELETE. Returns per op ok, loop or refused (code PX004 unknown id, PX005 not running at that stage or claim) and the new status. Raises before touching a row PX001, PX003, PX007.';
comment on function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], integer) is
    'pepsi_worker: a message running at p_stage goes pending to p_next_stage (no NOTIFY), p_state merged, strikes cleared, 1 + cardinality(p_via) hops counted; returns ok, or loop when that passed p_max_hops and failed it as a loop. Refuses PX001 (next or via stage), PX003 (state, p_max_hops), PX004 (unknown id), PX005 (not running at p_stage).';
comment on function pepsi.workqueue_finish(bigint, text) is
    'pepsi_worker: the message running at p_stage is done: its row is deleted (its body with the last sibling), its pepsi.workqueue_history row written (outcome finished) and the webhook event it carries, if any, marked processed. Refuses PX004 (unknown id), PX005 (not running at p_stage).';
comment on function pepsi.workqueue_pause(bigint, text, timestamp with time zone, text, jsonb) is
    'pepsi_worker: a running message is paused at its stage until p_until (the paused sweep makes it pending then); p_reason kept as state.pause_reason (cut to 4096 bytes), p_state merged. Refuses PX003 (no time, bad state), PX004, PX005.';
comment on function pepsi.failure_class_check(text) is
    'Internal validator: returns a failure class when it is permanent, retries-exhausted, crashed, timed-out or loop, else raises PX007.';
comment on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) is
    'pepsi_worker: a running message is failed (terminal until an operator resumes it) with state.last_error (cut to 4096 bytes), failed_stage and failure_class (default permanent). Refuses PX007 (unknown class), PX003 (bad state), PX004, PX005.';
comment on function pepsi.workqueue_requeue(bigint[], text[], integer) is
    'pepsi_runner: running rows handed out but never run (p_ids with the stage each was handed out for) go back to pending; a row that has moved on, or of another owner slot, is left alone. Returns how many. Refuses PX003 (arrays of different lengths, NULL p_owner_slot).';
comment on function pepsi.workqueue_unclaim(bigint[], integer) is
    'pepsi_runner: gives back (pending) the rows still running under the given claim ids, whose answer the dispatcher never read. Returns how many. Refuses PX003 (NULL arguments).';
comment on function pepsi.workqueue_reset_running(integer) is
    'pepsi_runner, at start-up while holding the slot''s dispatcher lock: every running row of owner slot p_owner_slot (orphaned by an earlier dispatcher) goes back to pending. Returns how many. Refuses PX003 (NULL slot).';
comment on function pepsi.workqueue_release_paused(timestamp with time zone, integer) is
    'pepsi_runner: the paused sweep: due paused rows of owner slot p_owner_slot become pending; returns how many and the earliest timeout still ahead (when to sweep next). Refuses PX003 (NULL p_now or slot).';
comment on function pepsi.workqueue_defer(bigint[], text[], timestamp with time zone, text, integer) is
    'pepsi_runner, for a worker that lost its database connection (status 74): its running rows are paused until p_until without blame, state.last_error = p_reason; rows that moved on are left. Returns how many. Refuses PX003 (no time, arrays of different lengths, NULL slot).';
comment on function pepsi.workqueue_strike(bigint, text, text, text, timestamp with time zone, integer) is
    'pepsi_runner: a strike for the head message of a worker that crashed (p_kind crash) or hung past MAX_RUNTIME (hang): paused 1 minute, then 2, the third strike failed/crashed or timeout/timed-out; state.strikes and last_error kept. Returns the new status (NULL: another slot''s row). Refuses PX003 (unknown kind, NULL p_now or slot), PX004, PX005.';
comment on function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]) is
    'pepsi_operator: failed, paused or timed-out rows, chosen by ids and/or stage, failure class, tube, statuses (at least one of the first four), go back to pending afresh (strikes, failure class, failed stage, hops cleared; last_error kept); NOTIFY workqueue. Running rows are never touched. Returns how many. Refuses PX003 (no selector, a status that cannot be resumed).';
comment on function pepsi.workqueue_delete(bigint[], text, timestamp with time zone) is
    'pepsi_operator: deletes messages on purpose (pending, paused, failed, timeout; all or nothing), each leaving a tombstone in workqueue_tombstones (reason, session user, p_now) and a workqueue_history row (deleted), so reconciliation never re-injects their webhook event. Refuses PX003 (1 to 10000 ids none NULL, a reason of 1 to 1000 bytes, NULL p_now), PX004 (unknown id), PX005 (running).';
comment on function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamp with time zone) is
    'pepsi_worker: a host error: the running message is paused with backoff 1, 2, 4 ... minutes (at most 1 hour), counting state.temporary_failures.<stage>; once older than p_max_lifetime it goes pending to p_bounce_stage, or failed (retries-exhausted). Returns the new status. Refuses PX001 (bounce stage), PX003 (bad lifetime, NULL p_now), PX004, PX005.';
comment on function pepsi.workqueue_commit_casts(jsonb) is
    'Internal slow path of workqueue_commit, run after a cast failed: raises PX003 naming the first result that is not an object or whose id, until or via is malformed.';
comment on function pepsi.workqueue_commit(text, jsonb, integer) is
    'pepsi_worker: commits a batch of results of rows running at p_stage in one statement (do: advance, finish, pause, fail, host_error; "at" and "via" for fused stages); returns each id with outcome ok, loop, failed (a host error left it failed) or refused (not running at p_stage). Refuses PX001 (a stage), PX003 (malformed results, named "result 3: ..."), PX007 (unknown class).';
comment on function pepsi.workqueue_split(bigint, text, jsonb) is
    'pepsi_worker: splits a running message by recipient groups (D-124): the first group stays on it (still running), every other group becomes a new pending message at the same stage sharing body, envelope, state and webhook event; returns the new ids. Refuses PX003 (groups malformed, fewer than two, not exactly the recipients), PX004, PX005.';
comment on function pepsi.workqueue_move(bigint, text, text, text[], integer) is
    'pepsi_worker: moves a running message from p_from through p_via to p_to, still running, by the hop rule (a fused stage paused or failed: D-115); returns ok, or loop when it passed p_max_hops and failed it. Refuses PX001 (a stage), PX003 (p_max_hops), PX004, PX005.';

-- ---- control signals, schema check ----

comment on function pepsi.control_signal_send(text) is
    'Schema owner (and pepsi''s own functions): moves the version of a control channel (config_changed, telemetry_changed, reconcile) and sends NOTIFY on it, both at commit; returns the new version. Refuses PX003 (unknown channel).';
comment on function pepsi.control_signal_versions() is
    'pepsi_runner and pepsi_reader: every control channel''s version; the runner acts on a notification only when the version moved, so a stranger''s NOTIFY does nothing.';
comment on function pepsi.schema_check(text[], text[]) is
    'Every duty role (for DBAs): compares the deployed schema with the sqitch plan a program was built from (change names and deploy-script SHA-1s, D-12): current, older (run sqitch deploy), newer (upgrade the program) or different, with where they part. Programs check pepsi.schema_api() instead. Refuses PX003 (an array NULL, arrays of different lengths).';

-- ---- per-address settings ----

comment on function pepsi.address_key(text) is
    'Internal: the form an address is matched and stored in pepsi.settings and user_address: lower case.';
comment on function pepsi.settings_put(text, text, text, text, text) is
    'Internal, granted to no role: the one writer of pepsi.settings behind settings_set and settings_apply: sets OPTION = VALUE of a stage for an address, recording its author. Raises PX001 (stage), PX002 (address), PX003 (option not an upper-case key, NULL value).';
comment on function pepsi.settings_set(text, text, text, text) is
    'pepsi_operator: sets a per-address override OPTION = VALUE of [stage-<p_stage>] for messages whose correspondent is p_address, operator-only options included; updated_by is the session user. Refuses PX001 (stage), PX002 (address), PX003 (option, NULL value: use settings_delete).';
comment on function pepsi.settings_delete(text, text, text) is
    'pepsi_operator: deletes the per-address overrides of p_address: all, those of one stage, or one option; returns how many.';
comment on function pepsi.settings_list(text, text) is
    'pepsi_reader and pepsi_worker: the per-address overrides, optionally of one address and/or stage, in a stable order. Writes nothing.';
comment on function pepsi.settings_for(jsonb, text, text[]) is
    'pepsi_worker, in the query that loads a message: the per-address overrides that apply to it, {"stage": {"address": {"OPTION": "value"}}} or NULL; the correspondent is the envelope sender of a state.local_origin message, else the recipients.';
comment on function pepsi.user_address_owns(text, text) is
    'Internal (settings_apply): whether end user p_login owns p_address: a row of pepsi.user_address, or the login is itself that address (case-insensitive); NULL or empty logins own nothing.';
comment on function pepsi.user_address_add(text, text) is
    'Schema owner (operators): records that end user p_login (a message''s origin_user) owns p_address, so that their settings control messages may change its settings; returns false when it already did. Refuses PX002 (address), PX003 (login empty, NULL or over 320 bytes).';
comment on function pepsi.user_address_remove(text, text) is
    'Schema owner (operators): takes p_address (every address when NULL) away from end user p_login; settings already made stay. Returns how many rows went.';
comment on function pepsi.user_address_list(text) is
    'pepsi_reader: the address ownership rows of one login or all, in a stable order. Writes nothing.';
comment on function pepsi.settings_apply(bigint, text, text, text, jsonb, text[], integer) is
    'pepsi_worker (pepsi-stage-edit-settings): an end user''s settings control message: the changes to p_address''s overrides and the message advanced to p_next (finished when NULL), in one call; returns how many changed and the outcome (ok, loop). Refuses, changing nothing: PX030 (no authenticated origin user, or it does not own p_address), PX031 (an operator-only option), PX001, PX002, PX003, PX004, PX005.';
comment on function pepsi.settings_option_operator_only(text) is
    'Internal (settings_apply): whether an option may only be set by an operator, never by an end user''s settings message (runs code, names a URL, carries a credential, routes messages, sizes pools), read from pepsi.config_key.';

-- ---- webhook providers, events, ingest, pull ----

comment on function pepsi.webhook_id_source_default(text) is
    'Internal: the external id''s source of a signature scheme when none is given (the header its provider documents as the delivery id, or a JSON field); NULL for hmac-sha256.';
comment on function pepsi.webhook_provider_check(pepsi.webhook_provider) is
    'Internal validator: raises PX010 with a precise message when a provider row is not usable (name, scheme, 1 to 16 secrets of at most 1024 bytes, tolerance, id source, hmac-sha256 options, stage, tube).';
comment on function pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text) is
    'Schema owner: adds an enabled webhook provider (POST /hooks/<provider>): signature scheme, secrets, entry stage and tube (stage NULL: events are pulled), id source, tolerance, hmac-sha256 options; NOTIFY webhook_provider_changed. Refuses PX010 (bad definition, or the name is taken).';
comment on function pepsi.webhook_provider_get(text) is
    'Internal: a provider''s row locked for update; raises PX011 when there is none.';
comment on function pepsi.webhook_provider_save(pepsi.webhook_provider) is
    'Internal: checks a provider row (PX010), writes it over the provider of that name, stamps updated_at and notifies webhook_provider_changed.';
comment on function pepsi.webhook_provider_change(text, jsonb) is
    'Schema owner: changes the given keys of a provider (scheme, secrets, stage, tube, id_source, tolerance, signature_header, signature_encoding, signature_prefix, enabled) and notifies the ingress; queued messages keep their stage. Refuses PX003 (not an object, unknown key), PX010 (unusable result), PX011 (no such provider).';
comment on function pepsi.webhook_provider_add_secret(text, text) is
    'Schema owner: starts a secret rotation: p_secret becomes the newest active secret, the old ones keep verifying; notifies the ingress. Refuses PX010 (bad secret, more than 16), PX011.';
comment on function pepsi.webhook_provider_retire_secret(text, text) is
    'Schema owner: ends a rotation: p_secret stops verifying; notifies the ingress. Refuses PX010 (not an active secret, or the last one: add the new one first), PX011.';
comment on function pepsi.webhook_provider_disable(text) is
    'Schema owner: the ingress stops accepting the provider''s requests (404 once it reloads); stored events and queued messages are untouched. Refuses PX011.';
comment on function pepsi.webhook_provider_enable(text) is
    'Schema owner: the ingress accepts the provider''s requests again. Refuses PX011.';
comment on function pepsi.webhook_provider_list() is
    'pepsi_ingress only: every enabled provider with its secrets (newest first), tolerance in seconds, id source and hmac-sha256 options: what the ingress keeps in memory. The only way a role other than the owner reads secrets.';
comment on function pepsi.webhook_event_finished() is
    'Trigger function of the row trigger after DELETE on pepsi.workqueue (rows that were running and carry a webhook_event_id): the message made from the event finished, so the event is marked processed (processed_at).';
comment on function pepsi.webhook_event_refresh_apply(bigint[], integer) is
    'Internal (webhook_events_pull, reconcile): applies the redeliveries recorded in webhook_event_refresh to events whose rows are free now: the newest replaces payload, headers and received_at of an unprocessed event; the records are forgotten. Returns how many events changed. Raises PX003 (p_limit not 1 to 1000000).';
comment on function pepsi.webhook_event_item(bigint, text, text, bytea, jsonb, timestamp with time zone, text, text, jsonb) is
    'Internal: the message of a webhook event as workqueue_create takes it: body the payload, header block from the headers, origin user webhook:<provider>, arrived at received_at, linked by webhook_event_id, state naming the event.';
comment on function pepsi.webhook_events_ingest(jsonb, bytea) is
    'pepsi_ingress: stores a burst of verified events in one upsert on (provider, external_id); each new event of a pipeline provider becomes a message at its stage and tube; at most one NOTIFY workqueue. Returns per event: new, refreshed, processed, busy (row locked: recorded for later) or repeated. All or nothing: PX003 (shape, over 10000 events, payload lengths, a payload over 64 MiB, headers over 1 MiB), PX011 (unknown provider), PX012 (external id, payload, headers, received_at).';
comment on function pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamp with time zone) is
    'pepsi_ingress (applications, tests): stores one verified event: webhook_events_ingest with a burst of one, same outcomes and errors, and PX003 for a NULL p_received_at.';
comment on function pepsi.webhook_events_pull(text, integer) is
    'pepsi_worker (an application''s own workers): up to p_limit (1 to 10000) unprocessed events of a pull provider, oldest first as a preference, locked FOR UPDATE SKIP LOCKED until the caller''s transaction ends (call it inside one); recorded redeliveries are applied first. Refuses PX003 (limit), PX011 (unknown provider), PX013 (the provider routes into the pipeline).';
comment on function pepsi.webhook_events_mark_processed(bigint[], timestamp with time zone) is
    'pepsi_worker: marks pulled events processed at p_now, in the transaction that pulled them; unknown or already processed ids are skipped. Returns how many. Refuses PX003 (NULL p_ids or p_now).';

-- ---- tombstones, gaps, back-fill ----

comment on function pepsi.webhook_tombstone_add(text, text, text, timestamp with time zone) is
    'pepsi_operator: records that a provider never sent an external id, with why, so that gap detection never flags it again; returns false when it was tombstoned already. Refuses PX003 (no reason, NULL p_now), PX011 (unknown provider), PX012 (bad id), PX020 (the event is stored).';
comment on function pepsi.webhook_tombstone_remove(text, text) is
    'pepsi_operator: takes a tombstone back, so that a later gap scan covering the id flags it again if still missing; returns whether there was one.';
comment on function pepsi.webhook_external_id_format(text, text, integer, bigint) is
    'Internal: the external id of a number in a sequence of kind integer (the decimal) or prefixed (prefix and the number zero-padded to width); NULL for kind none or a negative number.';
comment on function pepsi.webhook_external_id_number(text, text, integer, text) is
    'Internal: the number of an external id in a sequence, or NULL when the id is not the canonical spelling of one (the inverse of webhook_external_id_format).';
comment on function pepsi.webhook_id_sequence_set(text, text, text, integer, bigint, integer, interval, text, text, integer, boolean) is
    'Schema owner: describes a provider''s external id sequence (kind none, integer or prefixed with prefix and width) and its gap handling: scan window, retry_after, back-fill stage and tube (NULL stage: gaps only flagged), max attempts. Refuses PX001 (stage), PX006 (tube), PX011 (unknown provider), PX021 (bad sequence or limits).';
comment on function pepsi.webhook_id_sequence_rewind(text, bigint) is
    'Schema owner: the next gap scans of a provider start again at p_scan_from (e.g. after removing tombstones). Refuses PX021 (no sequence, negative number).';
comment on function pepsi.generate_external_id_sequence(text, bigint, bigint) is
    'pepsi_reader: the external ids a provider''s sequence implies for the numbers p_from to p_to, in order (a window of at most 1000000). Refuses PX003 (NULL or negative bounds, window too large), PX011 (unknown provider), PX021 (no sequence, or kind none). Writes nothing.';
comment on function pepsi.webhook_gaps_find(text, bigint, bigint) is
    'pepsi_reader: the gap anti-join: the ids of a provider''s sequence from p_from to p_to that have no stored event and no tombstone (NOT EXISTS, NULL-safe). Raises as generate_external_id_sequence; writes nothing.';
comment on function pepsi.webhook_gaps_recheck(timestamp with time zone) is
    'Internal (each reconciliation pass): resolves unresolved gaps whose event is now stored (arrived) or whose id was tombstoned; returns how many. Raises PX003 (NULL p_now).';
comment on function pepsi.webhook_gaps_detect(timestamp with time zone) is
    'Internal (each reconciliation pass): one window of the gap scan for every provider with an enabled sequence: missing ids become open rows of webhook_gaps and are returned; scan_from and the high water advance. Raises PX003 (NULL p_now).';
comment on function pepsi.webhook_backfill_inject(text, text, text, text, timestamp with time zone) is
    'Internal: queues one back-fill request message at the provider''s back-fill stage and tube (no body, origin user backfill:<provider>), NOTIFY workqueue; returns its id.';
comment on function pepsi.webhook_backfill_request(text, text, timestamp with time zone) is
    'pepsi_operator: asks the provider''s API for an external id now: a back-fill request message at its back-fill stage, recorded on the id''s gap row; returns the message id. Refuses PX003 (NULL p_now), PX011 (unknown provider), PX012 (bad id), PX020 (the event is stored), PX021 (no back-fill stage).';
comment on function pepsi.webhook_backfill_due(timestamp with time zone, integer) is
    'Internal (each reconciliation pass): requests back-fills for open gaps older than retry_after, asks again for requests whose message vanished (up to max_attempts), fails requests whose message failed; at most p_limit; one row per request or failure. Raises PX003.';
comment on function pepsi.webhook_backfill_check_id(text, text, bytea) is
    'Internal: raises PX023 unless a back-fill answer is the event asked for, as far as the id source shows it (json:<path>: the field equals the id; sha256: the body''s digest is the id).';
comment on function pepsi.webhook_backfill_store(bigint, text, integer, bytea, jsonb, timestamp with time zone) is
    'pepsi_worker (the http stage in GET mode): stores the answer to back-fill request p_id running at p_stage: a 2xx body is checked and stored through webhook_events_ingest (new, refreshed, processed, busy); 404, 410 or empty leaves a tombstone (tombstoned, or arrived); the gap is resolved. Refuses PX003, PX004, PX005, PX011, PX022 (not a back-fill message), PX023 (another event, or a status that is not an answer).';

-- ---- reconciliation ----

comment on function pepsi.webhook_event_delivered() is
    'Trigger function of the row trigger after DELETE on pepsi.workqueue for a finished webhook message: leaves the SHA-256 of the message''s body (what the destination received) in the transaction-local setting pepsi.delivered_digest for webhook_event_digest.';
comment on function pepsi.webhook_event_digest() is
    'Trigger function before UPDATE OF processed_at on pepsi.webhook_events: an event marked processed gets processed_digest (SHA-256 of the finishing message''s body, else of the payload); an event unmarked loses it.';
comment on function pepsi.reconcile_configure(jsonb) is
    'Schema owner: changes reconciliation settings (lost_after, stale_after, running_margin, default_max_runtime, paused_grace, retention, default_queue_limit, digest_batch, batch_limit) and history_retention; the next pass uses them. Refuses PX003 (not an object, unknown key, wrong type or range), PX051 (history_retention neither 0 nor 1 to 366 days).';
comment on function pepsi.reconcile_flag(bigint, timestamp with time zone, text[], jsonb, boolean) is
    'Internal step of a pass: records rows as flagged findings unless already open; with p_complete, open findings of those kinds that are gone are resolved (cleared). Returns how many were recorded.';
comment on function pepsi.reconcile_lost(bigint, timestamp with time zone, pepsi.reconcile_settings) is
    'Internal step of a pass: unprocessed events of pipeline providers older than lost_after with no message and no tombstone get a new message at the provider''s stage (finding lost_message, reinjected); NOTIFY workqueue. Returns how many.';
comment on function pepsi.reconcile_stuck(bigint, timestamp with time zone, pepsi.reconcile_settings, jsonb) is
    'Internal step of a pass: messages running longer than MAX_RUNTIME x (QUEUE_LIMIT + 1) + running_margin are requeued (stuck_running), paused ones overdue by paused_grace released (stuck_paused); NOTIFY workqueue. Returns how many.';
comment on function pepsi.reconcile_links(bigint, timestamp with time zone, pepsi.reconcile_settings) is
    'Internal step of a pass: flags webhook messages against their events (message_without_event, processed_with_message, message_failed) and pulled events unprocessed after stale_after (unprocessed_stale). Returns how many findings are new.';
comment on function pepsi.reconcile_digests(bigint, timestamp with time zone, pepsi.reconcile_settings) is
    'Internal step of a pass: the downstream-state check over the next digest_batch processed events: a processed_digest that no longer matches the payload is flagged (payload_mismatch); moves digest_cursor. Returns how many findings are new.';
comment on function pepsi.reconcile_gaps(bigint, timestamp with time zone, pepsi.reconcile_settings) is
    'Internal step of a pass: re-checks gaps, requests due back-fills, scans each provider''s next window (findings gap, backfill, backfill_failed). Returns how many findings are new.';
comment on function pepsi.reconcile_retention(timestamp with time zone, pepsi.reconcile_settings) is
    'Internal step of a pass: deletes resolved findings, resolved gaps and runs without findings older than retention, and keeps the workqueue_history partitions (workqueue_history_maintain).';
comment on function pepsi.reconcile_stamp() is
    'Internal: a number that moves whenever the tables a pass reads change (inserts, updates, deletes from pg_stat_all_tables; may lag a few seconds).';
comment on function pepsi.reconcile_unchanged(bigint) is
    'Internal: whether a pass now would see what the last one saw: the same reconcile_stamp, no message running, no redelivery waiting. Lets scheduled passes on an idle queue write nothing.';
comment on function pepsi.reconcile(timestamp with time zone, text, jsonb, boolean) is
    'pepsi_runner (every RECONCILE_INTERVAL and on NOTIFY reconcile; an operator as schema owner by hand): one reconciliation pass under a try-lock (another pass running: returns ran false at once): applies redeliveries, re-injects lost messages, requeues stuck ones, flags contradictions, checks digests, gaps and back-fills, applies retention; findings go to reconcile_findings. Refuses PX003 (NULL p_now, unknown trigger, malformed p_limits).';

-- ---- anomaly checks ----

comment on function pepsi.ingress_stats_flush(text, jsonb, timestamp with time zone) is
    'pepsi_ingress: adds an ingress instance''s counter deltas (stored, duplicate, rejected.<reason>) to pepsi.ingress_stats in one statement. Refuses PX003 (no instance, not an object of non-negative integers, unknown counter, NULL p_now).';
comment on function pepsi.dispatcher_slots() is
    'Internal: each owner slot of the partition map (slot 0 alone without one) and how many sessions hold its dispatcher lock now (0 or 1), for the dispatcher_lock check.';
comment on function pepsi.anomaly_sample_take(timestamp with time zone) is
    'Internal (anomaly_run): snapshots the cumulative counters (stage_stats, ingress_stats, rows written to the queue tables, dispatcher lock holders) into pepsi.anomaly_sample when they changed, and forgets snapshots older than two days.';
comment on function pepsi.anomaly_delta(text, text, interval, timestamp with time zone) is
    'Internal (check metrics): how much a sampled counter grew per subject over p_window before p_now, from pepsi.anomaly_sample; no row for a counter that went down.';
comment on function pepsi.anomaly_refresh(text) is
    'pepsi_runner: refreshes the checks'' materialized views CONCURRENTLY (one named, or all four when NULL); a view another session is refreshing is skipped and the result is then false. Refuses PX003 (unknown view).';
comment on function pepsi.anomaly_evaluate(text, timestamp with time zone) is
    'Schema owner (DBAs): evaluates one anomaly check at p_now without recording anything: state (disabled, error, no_data, firing, ok), value, subject and detail. Refuses PX003 (NULL p_now), PX024 (unknown check).';
comment on function pepsi.anomaly_run(timestamp with time zone, boolean) is
    'pepsi_runner (every ANOMALY_INTERVAL): runs the anomaly suite: refreshes the views (unless p_refresh is false), snapshots counters, evaluates every check, keeps anomaly_state, opens and closes anomaly_signal rows and sends NOTIFY reconcile when a check starts firing. One run at a time (returns no rows when another runs). Refuses PX003 (NULL p_now).';
comment on function pepsi.anomaly_check_set(text, jsonb) is
    'Schema owner: tunes an anomaly check without a deploy: min_value, max_value, severity (info, warning, critical), enabled, description; the next anomaly_run uses them. Refuses PX003 (not an object, unknown key, wrong type, no bound, min above max), PX024 (unknown check).';

-- ---- the configuration overlay ----

comment on function pepsi.config_override_changed() is
    'Trigger function on pepsi.config_override: any write to the overlay (also a DBA''s own statement) moves the config_changed version and sends NOTIFY config_changed, so the dispatcher reloads and retires its workers.';
comment on function pepsi.config_section_check(text) is
    'Internal: ''stage-<p_stage>'' for a valid stage name, else raises PX001.';
comment on function pepsi.config_key_check(text) is
    'Internal: returns a configuration key when it is upper case (A-Z, 0-9, _, starting with a letter), else raises PX003.';
comment on function pepsi.conf_duration_ms(text) is
    'Internal: a pepsi.conf duration (digits, optional fraction, unit ms, s, min, h or d; none: seconds) in milliseconds, or NULL when the runner''s parser would refuse it.';
comment on function pepsi.conf_edit_distance(text, text) is
    'Internal: the optimal string alignment distance of two keys (insertions, deletions, substitutions, neighbour transpositions), as the runner computes it.';
comment on function pepsi.conf_key_typo(text, text) is
    'Internal: the key of a section kind that p_key is probably a typo of (edit distance 1 for keys of up to 4 characters, else 2), or NULL: the runner''s rule, for "did you mean" messages.';
comment on function pepsi.config_value_check(text, text, text) is
    'Internal (config_set, config_unset): raises PX044 unless KEY = VALUE (NULL: the key taken out) is what the runner accepts in [stage-<p_stage>] by pepsi.config_key: a known key, a value of its type and range.';
comment on function pepsi.config_graph() is
    'Internal: the stage graph as SQL knows it: the file sections the dispatchers last published (pepsi.stage_served) with the overlay laid over them; per stage its PROGRAM and stage references (NEXT, BOUNCE_STAGE, THEN, ELSE).';
comment on function pepsi.config_graph_check(text) is
    'Internal: raises PX044 when, after a change of [stage-<p_stage>], that stage has no PROGRAM or names an unknown stage, or another stage still names a removed one.';
comment on function pepsi.config_set(text, text, text) is
    'pepsi_operator: sets KEY = VALUE in [stage-<p_stage>] of the database overlay (adding the stage if the file lacks it), validated like the runner''s reload; NOTIFY config_changed. Refuses PX001 (stage name), PX003 (key, NULL value: use config_unset), PX044 (an unknown or typo''d key, a bad value, no PROGRAM, a reference to no stage).';
comment on function pepsi.config_unset(text, text) is
    'pepsi_operator: takes KEY out of [stage-<p_stage>] (a common key returns to its default), whatever the file says; NOTIFY config_changed. Refuses PX001, PX003, PX044 (a typo''d key, PROGRAM, a reference another stage needs).';
comment on function pepsi.config_remove_stage(text) is
    'pepsi_operator: removes [stage-<p_stage>] from the running graph (file section and overlay alike); its pending messages wait until the stage exists again; NOTIFY config_changed. Refuses PX001, PX044 (another stage still names it).';
comment on function pepsi.config_clear(text) is
    'pepsi_operator: drops the overlay of one stage (all stages when NULL): the file applies again; returns how many rows went and sends NOTIFY config_changed when any did. Refuses PX001.';
comment on function pepsi.config_overlay() is
    'pepsi_runner, pepsi_worker and pepsi_reader: the overlay rows (section, key, value) in the order they are applied; key * with NULL value removes a section. Writes nothing.';
comment on function pepsi.telemetry_changed() is
    'Schema owner, after [pepsi] SHARE_TELEMETRY was rewritten in the file: moves the telemetry_changed version and notifies, so that the dispatcher retires every worker (the stage table stays).';

-- ---- operator actions ----

comment on function pepsi.workqueue_ids_check(bigint[], text) is
    'Internal: raises PX003 unless the id array holds 1 to 10000 ids, none NULL; p_what names the action.';

-- ---- tables, views and materialized views ----

comment on table pepsi.stage_stats is
    'Cumulative counters per stage and owner slot, written only by the dispatcher (pepsi.stats_flush); pepsi.stage_totals sums them over slots. Best effort: a crash loses the deltas not yet flushed.';
comment on table pepsi.dispatch_stats is
    'Cumulative counters of each owner slot''s dispatcher (claims, wake-ups, workers), written only by it (pepsi.stats_flush).';
comment on view pepsi.stage_totals is
    'pepsi.stage_stats summed over owner slots, one row per stage, with the mean worker time per run.';
comment on materialized view pepsi.anomaly_event_mv is
    'Anomaly checks: per webhook provider (and any provider name found on events without a provider row), the events of the last 25 hours, latency percentiles of the last hour and unprocessed events. Refreshed CONCURRENTLY by pepsi.anomaly_run / anomaly_refresh.';
comment on materialized view pepsi.anomaly_queue_mv is
    'Anomaly checks: per stage and status, the messages, oldest arrival, oldest claim and earliest paused timeout. Refreshed CONCURRENTLY by pepsi.anomaly_run / anomaly_refresh.';
comment on materialized view pepsi.anomaly_orphan_mv is
    'Anomaly checks: orphaned and contradictory records (W-40), one row per kind with how many and an example. Refreshed CONCURRENTLY by pepsi.anomaly_run / anomaly_refresh.';
comment on materialized view pepsi.anomaly_gap_mv is
    'Anomaly checks: per provider with an id sequence or gaps, the unresolved gaps, the oldest and failed back-fills. Refreshed CONCURRENTLY by pepsi.anomaly_run / anomaly_refresh.';

-- ---- columns of the views ----

comment on column pepsi.tubes.tube is 'The tube name; default is always listed.';
comment on column pepsi.tubes.partition is 'The tube''s partition under the stored topology (pepsi.tube_locate; 0 without one).';
comment on column pepsi.tubes.owner_slot is 'The owner slot whose runner claims the tube''s rows (0 without a topology).';
comment on column pepsi.tubes.pending is 'Rows of the tube waiting to be claimed (beanstalkd: ready).';
comment on column pepsi.tubes.running is 'Rows of the tube running at a worker (beanstalkd: reserved).';
comment on column pepsi.tubes.paused is 'Rows of the tube paused until their timeout (beanstalkd: delayed).';
comment on column pepsi.tubes.failed is 'Failed rows of the tube, kept for an operator (beanstalkd: buried).';
comment on column pepsi.tubes.timeout is 'Rows of the tube timed out after three hangs, kept for an operator (beanstalkd: buried).';
comment on column pepsi.tubes.paused_until is 'When the tube''s pause (pepsi.tube_pause) ends; NULL when not paused.';

comment on column pepsi.queue_overview.tube is 'The tube.';
comment on column pepsi.queue_overview.stage is 'The stage the rows wait, run, are paused or failed at.';
comment on column pepsi.queue_overview.status is 'pending, running, paused, failed or timeout.';
comment on column pepsi.queue_overview.messages is 'How many rows have this tube, stage and status.';
comment on column pepsi.queue_overview.oldest_age is 'now() minus the oldest arrival among them (an interval).';
comment on column pepsi.queue_overview.next_retry is 'For paused rows: the earliest timeout, when the next one becomes pending again; NULL otherwise.';

comment on column pepsi.stuck.workqueue_id is 'The message''s id.';
comment on column pepsi.stuck.tube is 'The message''s tube.';
comment on column pepsi.stuck.stage is 'The stage it has been running at.';
comment on column pepsi.stuck.sender_key is 'Whom fair scheduling charges it to (user:, ip:, null:, from:).';
comment on column pepsi.stuck.claimed_at is 'When a dispatcher set it running.';
comment on column pepsi.stuck.running_for is 'now() - claimed_at: longer than pepsi.stuck_after (default 10 minutes).';
comment on column pepsi.stuck.arrived_at is 'When it was queued.';
comment on column pepsi.stuck.state is 'The message''s JSON state (strikes, hops, last_error, what stages recorded).';

comment on column pepsi.failed.workqueue_id is 'The message''s id (for workqueue_resume, workqueue_retry, workqueue_delete).';
comment on column pepsi.failed.tube is 'The message''s tube.';
comment on column pepsi.failed.stage is 'The stage the row is at.';
comment on column pepsi.failed.status is 'failed or timeout (three hangs past MAX_RUNTIME).';
comment on column pepsi.failed.failed_stage is 'state.failed_stage: the stage that failed it.';
comment on column pepsi.failed.failure_class is 'state.failure_class: permanent, retries-exhausted, crashed, timed-out or loop.';
comment on column pepsi.failed.last_error is 'state.last_error: why, as the stage or dispatcher said it (at most 4096 bytes).';
comment on column pepsi.failed.strikes is 'state.strikes: crashes or hangs charged at its stage (0 when absent or not a count).';
comment on column pepsi.failed.sender_key is 'Whom fair scheduling charges it to (user:, ip:, null:, from:).';
comment on column pepsi.failed.arrived_at is 'When it was queued.';

comment on column pepsi.stage_totals.stage is 'The stage.';
comment on column pepsi.stage_totals.stages_executed is 'Worker passes that began at this stage (a fused chain counts once).';
comment on column pepsi.stage_totals.runs is 'Times the stage''s logic ran, fused or not.';
comment on column pepsi.stage_totals.run_usec is 'Worker time spent in this stage, in microseconds.';
comment on column pepsi.stage_totals.avg_usec is 'run_usec / runs, microseconds per run (NULL before the first run).';
comment on column pepsi.stage_totals.succeeded is 'Worker runs that answered status 0.';
comment on column pepsi.stage_totals.failed is 'Worker runs that failed the message (other non-zero statuses).';
comment on column pepsi.stage_totals.tempfailed is 'Worker runs that answered 75 (database overload): requeued.';
comment on column pepsi.stage_totals.strikes is 'Crashes and hangs charged to a message at this stage.';
comment on column pepsi.stage_totals.requeued is 'Messages handed out to a worker but returned unrun.';
comment on column pepsi.stage_totals.updated_at is 'The latest flush of any owner slot''s counters of this stage.';

comment on column pepsi.webhook_providers.provider is 'The provider''s name: the <provider> of POST /hooks/<provider>.';
comment on column pepsi.webhook_providers.scheme is 'Signature scheme: standard-webhooks, stripe, github, slack, shopify or hmac-sha256.';
comment on column pepsi.webhook_providers.active_secrets is 'How many signing secrets verify now (2 or more during a rotation); the secrets themselves are not shown.';
comment on column pepsi.webhook_providers.tolerance is 'How far a signed timestamp may lie from the ingress clock, both ways.';
comment on column pepsi.webhook_providers.id_source is 'Where the external id comes from: header:<Name>, json:<path> or sha256.';
comment on column pepsi.webhook_providers.signature_header is 'hmac-sha256 only: the header carrying the signature.';
comment on column pepsi.webhook_providers.signature_encoding is 'hmac-sha256 only: hex or base64.';
comment on column pepsi.webhook_providers.signature_prefix is 'hmac-sha256 only: text before the signature value (e.g. sha256=).';
comment on column pepsi.webhook_providers.mode is 'pipeline (new events become messages at stage, tube) or pull (webhook_events_pull).';
comment on column pepsi.webhook_providers.stage is 'Entry stage of the messages made from new events; NULL in pull mode.';
comment on column pepsi.webhook_providers.tube is 'Tube of the messages made from new events.';
comment on column pepsi.webhook_providers.enabled is 'false: the ingress refuses the provider''s requests (404).';
comment on column pepsi.webhook_providers.created_at is 'When the provider was added.';
comment on column pepsi.webhook_providers.updated_at is 'When the provider was last changed.';

comment on column pepsi.webhook_event_overview.provider is 'The provider the events came from.';
comment on column pepsi.webhook_event_overview.events is 'Stored events of the provider.';
comment on column pepsi.webhook_event_overview.unprocessed is 'Of those, not processed yet (processed_at NULL).';
comment on column pepsi.webhook_event_overview.oldest_unprocessed_at is 'received_at of the oldest unprocessed event; NULL when none.';
comment on column pepsi.webhook_event_overview.last_received_at is 'received_at of the newest stored delivery.';

comment on column pepsi.sender_backlog.stage is 'The stage the rows wait at.';
comment on column pepsi.sender_backlog.sender_key is 'Whom fair scheduling charges them to (user:, ip:, null:, from:).';
comment on column pepsi.sender_backlog.waiting is 'Pending rows of this sender at this stage.';
comment on column pepsi.sender_backlog.oldest_age is 'now() minus the oldest arrival among them.';
comment on column pepsi.sender_backlog.oldest_workqueue_id is 'The oldest of them: the next the fair claim takes of this sender.';

comment on column pepsi.reconcile_open.finding_id is 'The finding''s id (pepsi.reconcile_findings).';
comment on column pepsi.reconcile_open.kind is 'What was found: lost_message, message_failed, unprocessed_stale, stuck_running, stuck_paused, processed_with_message, message_without_event, payload_mismatch, gap, backfill or backfill_failed.';
comment on column pepsi.reconcile_open.object is 'The object it concerns, as kind:id (e.g. event:42, message:7).';
comment on column pepsi.reconcile_open.action is 'What the pass did: flagged, recorded or backfill_requested (repairs are resolved at once).';
comment on column pepsi.reconcile_open.provider is 'The webhook provider concerned, if any.';
comment on column pepsi.reconcile_open.external_id is 'The provider''s external id concerned, if any.';
comment on column pepsi.reconcile_open.webhook_event_id is 'The webhook event concerned, if any.';
comment on column pepsi.reconcile_open.workqueue_id is 'The message concerned, if any.';
comment on column pepsi.reconcile_open.detail is 'Details as JSON (ages, statuses, digests).';
comment on column pepsi.reconcile_open.found_at is 'When a pass first found it.';
comment on column pepsi.reconcile_open.run_id is 'The pass that found it (pepsi.reconcile_runs).';

comment on column pepsi.anomaly_dashboard.check_name is 'The check''s name (pepsi.anomaly_check).';
comment on column pepsi.anomaly_dashboard.state is 'firing, error, no_data, ok, disabled, or pending when no run evaluated it yet.';
comment on column pepsi.anomaly_dashboard.severity is 'info, warning or critical.';
comment on column pepsi.anomaly_dashboard.family is 'latency, referential, volume or health.';
comment on column pepsi.anomaly_dashboard.value is 'The value reported, rounded to 3 decimals: the worst subject when firing, the one closest to a bound when ok.';
comment on column pepsi.anomaly_dashboard.unit is 'The value''s unit (seconds, events, ratio ...).';
comment on column pepsi.anomaly_dashboard.expected is 'The expected range as text: <= max, >= min or min .. max.';
comment on column pepsi.anomaly_dashboard.subject is 'What the value is of: a provider, stage, table, owner slot ...';
comment on column pepsi.anomaly_dashboard.since is 'Since when the state holds.';
comment on column pepsi.anomaly_dashboard.evaluated_at is 'When the state row was last written.';
comment on column pepsi.anomaly_dashboard.detail is 'How many subjects are out of range, or the error.';
comment on column pepsi.anomaly_dashboard.description is 'What the check watches.';

comment on column pepsi.anomaly_event_mv.provider is 'The provider name (of a provider row, or found on events).';
comment on column pepsi.anomaly_event_mv.known is 'Whether a pepsi.webhook_provider row exists for it (false: events_of_unknown_provider).';
comment on column pepsi.anomaly_event_mv.pulled is 'true for a pull provider (no stage).';
comment on column pepsi.anomaly_event_mv.enabled is 'Whether the provider is enabled (false when unknown).';
comment on column pepsi.anomaly_event_mv.provider_created_at is 'When the provider was added (NULL when unknown).';
comment on column pepsi.anomaly_event_mv.received_15m is 'Events received in the 15 minutes before the refresh.';
comment on column pepsi.anomaly_event_mv.received_baseline is 'Events received between 25 and 1 hours before the refresh (the baseline of the volume checks).';
comment on column pepsi.anomaly_event_mv.processed_1h is 'Events of the last 25 hours processed in the hour before the refresh.';
comment on column pepsi.anomaly_event_mv.latency_p50 is 'Median received-to-processed latency of the events processed in the last hour, in seconds.';
comment on column pepsi.anomaly_event_mv.latency_p95 is '95th percentile of that latency, in seconds.';
comment on column pepsi.anomaly_event_mv.latency_p99 is '99th percentile of that latency, in seconds.';
comment on column pepsi.anomaly_event_mv.last_received_at is 'The newest received_at within the last 25 hours.';
comment on column pepsi.anomaly_event_mv.unprocessed is 'Unprocessed events of the provider, but those whose message an operator deleted (workqueue_tombstones).';
comment on column pepsi.anomaly_event_mv.oldest_unprocessed_at is 'received_at of the oldest of them.';
comment on column pepsi.anomaly_event_mv.refreshed_at is 'When the view was refreshed.';

comment on column pepsi.anomaly_queue_mv.stage is 'The stage.';
comment on column pepsi.anomaly_queue_mv.status is 'pending, running, paused, failed or timeout.';
comment on column pepsi.anomaly_queue_mv.messages is 'Rows with this stage and status.';
comment on column pepsi.anomaly_queue_mv.oldest_arrived_at is 'The oldest arrival among them.';
comment on column pepsi.anomaly_queue_mv.oldest_claimed_at is 'The oldest claimed_at among them (running rows).';
comment on column pepsi.anomaly_queue_mv.earliest_timeout is 'The earliest timeout among them (paused rows).';
comment on column pepsi.anomaly_queue_mv.refreshed_at is 'When the view was refreshed.';

comment on column pepsi.anomaly_orphan_mv.kind is 'messages_missing_body, messages_missing_event, bodies_without_message, unprocessed_events_without_message, processed_events_with_live_message, tombstones_for_existing_events, events_of_unknown_provider or message_event_mismatch.';
comment on column pepsi.anomaly_orphan_mv.found is 'How many records of that kind.';
comment on column pepsi.anomaly_orphan_mv.example is 'One of them (the smallest id), e.g. message 42; NULL when none.';
comment on column pepsi.anomaly_orphan_mv.refreshed_at is 'When the view was refreshed.';

comment on column pepsi.anomaly_gap_mv.provider is 'The provider (with an id sequence or gaps).';
comment on column pepsi.anomaly_gap_mv.open_gaps is 'Unresolved gaps (pepsi.webhook_gaps, resolved_at NULL).';
comment on column pepsi.anomaly_gap_mv.oldest_open_at is 'first_seen_at of the oldest unresolved gap.';
comment on column pepsi.anomaly_gap_mv.failed_backfills is 'Gaps whose back-fill failed (state failed).';
comment on column pepsi.anomaly_gap_mv.refreshed_at is 'When the view was refreshed.';

-- ---- columns of the tables pepsi_reader reads ----

comment on column pepsi.workqueue_history.tube is 'The message''s tube.';
comment on column pepsi.workqueue_history.sender_key is 'Whom fair scheduling charged it to (user:, ip:, null:, from:).';
comment on column pepsi.workqueue_history.origin_user is 'The authenticated user that sent it, when known.';
comment on column pepsi.workqueue_history.arrived_at is 'When it was queued.';

comment on column pepsi.topology.singleton is 'Always true: the table holds at most one row.';
comment on column pepsi.topology.partition_count is 'How many partitions the tube hash is reduced to (1 to 65536); never changes while messages exist (PX040).';
comment on column pepsi.topology.hash_name is 'The tube hash: fnv1a64 (FNV-1a 64 over the name''s bytes).';
comment on column pepsi.topology.version is 'Counts the topology''s changes, from 1.';
comment on column pepsi.topology.fingerprint is 'Lowercase hex SHA-256 of hash, count and map: what a runner''s TOPOLOGY_FINGERPRINT must equal.';
comment on column pepsi.topology.changed_at is 'When the topology last changed.';

comment on column pepsi.partition_map.partition is 'A partition, 0 to partition_count - 1.';
comment on column pepsi.partition_map.owner_slot is 'The owner slot (0 or more) whose runner claims the rows of that partition.';

comment on column pepsi.stage_stats.stage is 'The stage.';
comment on column pepsi.stage_stats.owner_slot is 'The owner slot whose dispatcher counted these.';
comment on column pepsi.stage_stats.stages_executed is 'Worker passes that began at this stage (a fused chain counts once).';
comment on column pepsi.stage_stats.runs is 'Times the stage''s logic ran, fused or not.';
comment on column pepsi.stage_stats.run_usec is 'Worker time spent in this stage, in microseconds.';
comment on column pepsi.stage_stats.succeeded is 'Worker runs that answered status 0.';
comment on column pepsi.stage_stats.failed is 'Worker runs that failed the message (other non-zero statuses).';
comment on column pepsi.stage_stats.tempfailed is 'Worker runs that answered 75 (database overload): requeued. Status 74 deferrals are counted nowhere.';
comment on column pepsi.stage_stats.strikes is 'Crashes and hangs charged to a message at this stage.';
comment on column pepsi.stage_stats.requeued is 'Messages handed out to a worker but returned unrun.';
comment on column pepsi.stage_stats.updated_at is 'When the dispatcher last flushed deltas into the row.';

comment on column pepsi.dispatch_stats.owner_slot is 'The owner slot whose dispatcher counted these.';
comment on column pepsi.dispatch_stats.claims is 'Claim statements run.';
comment on column pepsi.dispatch_stats.claimed is 'Rows set running by them.';
comment on column pepsi.dispatch_stats.wakeups is 'Claim rounds started, whatever woke them.';
comment on column pepsi.dispatch_stats.notifications is 'workqueue notifications received.';
comment on column pepsi.dispatch_stats.workers_started is 'Worker processes started.';
comment on column pepsi.dispatch_stats.workers_exited is 'Worker processes that exited, for any reason.';
comment on column pepsi.dispatch_stats.bodies_collected is 'Orphaned bodies removed by workqueue_body_gc.';
comment on column pepsi.dispatch_stats.updated_at is 'When the dispatcher last flushed deltas into the row.';

comment on column pepsi.stage_served.owner_slot is 'The owner slot whose dispatcher published the row.';
comment on column pepsi.stage_served.stage is 'A stage name of its file or running graph.';
comment on column pepsi.stage_served.served is 'true: in the running graph (file and overlay), so the dispatcher claims its messages.';
comment on column pepsi.stage_served.in_file is 'true: a [stage-*] section of the dispatcher''s file (program and refs are as the file says them).';
comment on column pepsi.stage_served.program is 'The section''s PROGRAM in the file; NULL when none.';
comment on column pepsi.stage_served.refs is 'The file''s stage references of the section, as a JSON object: {"NEXT": name, "BOUNCE_STAGE": ..., "THEN": ..., "ELSE": ...} (only those set).';
comment on column pepsi.stage_served.published_at is 'When the dispatcher published it (start-up or reload).';

comment on column pepsi.workqueue_history_settings.singleton is 'Always true: the table holds one row.';
comment on column pepsi.workqueue_history_settings.updated_at is 'When the retention was last changed (reconcile_configure history_retention).';

comment on column pepsi.workqueue_tombstones.workqueue_id is 'The deleted message''s id.';
comment on column pepsi.workqueue_tombstones.stage is 'The stage it was at.';
comment on column pepsi.workqueue_tombstones.status is 'Its status when deleted: pending, paused, failed or timeout.';
comment on column pepsi.workqueue_tombstones.tube is 'Its tube.';
comment on column pepsi.workqueue_tombstones.webhook_event_id is 'The webhook event it carried, if any: reconciliation never re-injects that event.';
comment on column pepsi.workqueue_tombstones.reason is 'Why, as the operator gave it (1 to 1000 bytes).';
comment on column pepsi.workqueue_tombstones.deleted_by is 'The session user who deleted it (or purged it).';
comment on column pepsi.workqueue_tombstones.deleted_at is 'When it was deleted.';

comment on column pepsi.control_signal.channel is 'config_changed, telemetry_changed or reconcile: the NOTIFY channel.';
comment on column pepsi.control_signal.version is 'Moved by each change the channel announces; a runner acts on a notification only when it moved.';
comment on column pepsi.control_signal.changed_at is 'When the version last moved.';
comment on column pepsi.control_signal.changed_by is 'The session user whose change moved it.';

comment on column pepsi.settings.address is 'The correspondent address, lower case.';
comment on column pepsi.settings.stage is 'The stage whose [stage-<name>] option is overridden.';
comment on column pepsi.settings.option is 'The option (an upper-case key of the stage''s section).';
comment on column pepsi.settings.value is 'The value used instead of the section''s for messages of this correspondent.';
comment on column pepsi.settings.updated_at is 'When it was last set.';
comment on column pepsi.settings.updated_by is 'Who set it: an operator''s session user, or user:<origin_user> for an end user''s settings message.';

comment on column pepsi.user_address.login is 'The end user''s login: a message''s origin_user (1 to 320 bytes).';
comment on column pepsi.user_address.address is 'An address that user owns (lower case): their settings messages may change its settings.';
comment on column pepsi.user_address.added_at is 'When the ownership was recorded.';
comment on column pepsi.user_address.added_by is 'The session user who recorded it.';

comment on column pepsi.webhook_tombstones.provider is 'The webhook provider.';
comment on column pepsi.webhook_tombstones.external_id is 'The external id the provider never sent (1 to 1024 bytes).';
comment on column pepsi.webhook_tombstones.reason is 'Why it is known never to have been sent (1 to 1000 bytes), e.g. the back-fill''s HTTP status.';
comment on column pepsi.webhook_tombstones.source is 'operator (webhook_tombstone_add) or backfill (the provider''s API had no such event).';
comment on column pepsi.webhook_tombstones.created_at is 'When the tombstone was written.';

comment on column pepsi.webhook_id_sequence.provider is 'The webhook provider whose external ids form the sequence.';
comment on column pepsi.webhook_id_sequence.kind is 'none (no gap detection), integer (1, 2, ... no leading zeros) or prefixed (prefix + zero-padded number).';
comment on column pepsi.webhook_id_sequence.prefix is 'prefixed: the text before the number (at most 100 bytes); empty otherwise.';
comment on column pepsi.webhook_id_sequence.width is 'prefixed: the number''s zero-padded width in digits (1 to 18); 0 otherwise.';
comment on column pepsi.webhook_id_sequence.window_size is 'At most this many ids per gap scan and pass (1 to 1000000).';
comment on column pepsi.webhook_id_sequence.backfill_stage is 'Stage of the back-fill request messages; NULL: gaps are only flagged, never back-filled.';
comment on column pepsi.webhook_id_sequence.backfill_tube is 'Tube of the back-fill request messages.';
comment on column pepsi.webhook_id_sequence.max_attempts is 'Back-fill requests an id gets before its gap is failed (1 to 100).';
comment on column pepsi.webhook_id_sequence.enabled is 'false: the gap scan skips the provider.';
comment on column pepsi.webhook_id_sequence.updated_at is 'When the sequence was last set (webhook_id_sequence_set, _rewind).';

comment on column pepsi.webhook_gaps.provider is 'The webhook provider.';
comment on column pepsi.webhook_gaps.external_id is 'The external id found missing.';
comment on column pepsi.webhook_gaps.number is 'Its number in the provider''s sequence (NULL for an id an operator asked for outside it).';
comment on column pepsi.webhook_gaps.state is 'open (missing, re-checked), backfill (a request is under way), failed (the back-fill gave up); resolved: arrived (the delivery came), found (the back-fill stored it), tombstoned.';
comment on column pepsi.webhook_gaps.first_seen_at is 'When a pass first found the id missing.';
comment on column pepsi.webhook_gaps.checked_at is 'When a pass or the back-fill last looked at it.';
comment on column pepsi.webhook_gaps.attempts is 'Back-fill requests made for it so far.';
comment on column pepsi.webhook_gaps.workqueue_id is 'The message of the latest back-fill request, if any.';
comment on column pepsi.webhook_gaps.requested_at is 'When the latest back-fill was requested.';
comment on column pepsi.webhook_gaps.resolved_at is 'When it was resolved (arrived, found, tombstoned); NULL while unresolved.';
comment on column pepsi.webhook_gaps.detail is 'What happened last, as text (e.g. why a back-fill failed).';

comment on column pepsi.reconcile_settings.singleton is 'Always true: the table holds one row (change it with reconcile_configure).';
comment on column pepsi.reconcile_settings.lost_after is 'An unprocessed event of a pipeline provider without a message is lost after this long (default 5 minutes): re-injected.';
comment on column pepsi.reconcile_settings.stale_after is 'An event of a pull provider unprocessed this long is flagged unprocessed_stale (default 1 hour).';
comment on column pepsi.reconcile_settings.running_margin is 'Added to MAX_RUNTIME x (QUEUE_LIMIT + 1) before a running message counts as stuck (default 5 minutes).';
comment on column pepsi.reconcile_settings.default_max_runtime is 'MAX_RUNTIME of a stage the runner sent no limits for (default 10 minutes).';
comment on column pepsi.reconcile_settings.default_queue_limit is 'QUEUE_LIMIT of a stage the runner sent no limits for (1 to 1024, default 4).';
comment on column pepsi.reconcile_settings.paused_grace is 'A paused row overdue by more than this is released by the pass (default 5 minutes).';
comment on column pepsi.reconcile_settings.digest_batch is 'Processed events whose digest a pass re-checks (0 to 10000000, default 10000; 0: none).';
comment on column pepsi.reconcile_settings.batch_limit is 'At most this many findings per step of a pass (1 to 1000000, default 1000).';
comment on column pepsi.reconcile_settings.retention is 'Resolved findings, resolved gaps and empty runs older than this are deleted (at least 1 hour, default 30 days).';
comment on column pepsi.reconcile_settings.digest_cursor is 'The webhook_event_id after which the next digest batch starts; wraps to 0 at the end of the table.';
comment on column pepsi.reconcile_settings.updated_at is 'When the settings (or the cursor) last changed.';

comment on column pepsi.reconcile_runs.run_id is 'The pass''s id.';
comment on column pepsi.reconcile_runs.trigger is 'What started it: schedule (RECONCILE_INTERVAL), notify (NOTIFY reconcile, e.g. from anomaly_run) or manual.';
comment on column pepsi.reconcile_runs.started_at is 'The pass''s clock (p_now).';
comment on column pepsi.reconcile_runs.finished_at is 'When it ended: started_at plus its duration; NULL while running.';
comment on column pepsi.reconcile_runs.duration_ms is 'How long it took, in milliseconds.';
comment on column pepsi.reconcile_runs.findings is 'How many new findings it recorded.';
comment on column pepsi.reconcile_runs.stamp is 'pepsi.reconcile_stamp() when it ran: a scheduled pass over the same stamp is skipped.';

comment on column pepsi.reconcile_findings.finding_id is 'The finding''s id.';
comment on column pepsi.reconcile_findings.run_id is 'The pass that found it (pepsi.reconcile_runs).';
comment on column pepsi.reconcile_findings.kind is 'lost_message, message_failed, unprocessed_stale, stuck_running, stuck_paused, processed_with_message, message_without_event, payload_mismatch, gap, backfill or backfill_failed (README "Reconciliation").';
comment on column pepsi.reconcile_findings.object is 'The object it concerns as kind:id, e.g. event:42 or message:7.';
comment on column pepsi.reconcile_findings.provider is 'The webhook provider concerned, if any.';
comment on column pepsi.reconcile_findings.external_id is 'The provider''s external id concerned, if any.';
comment on column pepsi.reconcile_findings.webhook_event_id is 'The webhook event concerned, if any.';
comment on column pepsi.reconcile_findings.workqueue_id is 'The message concerned (or made, for reinjected), if any.';
comment on column pepsi.reconcile_findings.action is 'What the pass did: reinjected, requeued, released (repairs), flagged (for a person), recorded (a gap) or backfill_requested.';
comment on column pepsi.reconcile_findings.detail is 'Details as JSON (stage, ages, statuses, digests).';
comment on column pepsi.reconcile_findings.found_at is 'When a pass found it.';
comment on column pepsi.reconcile_findings.resolved_at is 'When it was resolved; NULL: open (pepsi.reconcile_open).';
comment on column pepsi.reconcile_findings.resolution is 'How: repaired (the pass''s own repair), cleared (the condition is gone), or the gap''s outcome (arrived, found, tombstoned).';

comment on column pepsi.ingress_stats.instance is 'The ingress instance that reported (1 to 200 bytes).';
comment on column pepsi.ingress_stats.counter is 'stored, duplicate or rejected.<reason> (the reasons of the ingress''s GET /metrics).';
comment on column pepsi.ingress_stats.value is 'The cumulative count.';
comment on column pepsi.ingress_stats.updated_at is 'When the instance last flushed deltas into it.';

comment on column pepsi.anomaly_sample.source is 'stage (stage_stats), ingress (ingress_stats), table (rows written to a queue table) or dispatcher (lock holders per owner slot).';
comment on column pepsi.anomaly_sample.counter is 'The counter: stages_executed, failed, strikes, tempfailed; stored, duplicate, rejected; modified; holders.';
comment on column pepsi.anomaly_sample.subject is 'What it counts for: a stage, a rejection reason (all for the others), a table, owner slot N.';
comment on column pepsi.anomaly_sample.sampled_at is 'The clock of the anomaly_run that took it; a snapshot is taken only when the value changed.';
comment on column pepsi.anomaly_sample.value is 'The counter''s cumulative value then.';

comment on column pepsi.anomaly_check.name is 'The check''s name (lower case, digits, _).';
comment on column pepsi.anomaly_check.family is 'latency, referential, volume or health.';
comment on column pepsi.anomaly_check.description is 'What the check watches, for people.';
comment on column pepsi.anomaly_check.metric is 'The SQL query returning (subject, value) rows; $1 is the evaluation''s clock.';
comment on column pepsi.anomaly_check.reads is 'What the metric reads: matview (the anomaly_*_mv views), samples (anomaly_sample rates) or live (statistics views).';
comment on column pepsi.anomaly_check.unit is 'The value''s unit (seconds, events, ratio ...; may be empty).';
comment on column pepsi.anomaly_check.min_value is 'Lower bound of the expected range; NULL: open. Tune with anomaly_check_set.';
comment on column pepsi.anomaly_check.max_value is 'Upper bound of the expected range; NULL: open (at least one bound is set).';
comment on column pepsi.anomaly_check.severity is 'info, warning or critical.';
comment on column pepsi.anomaly_check.enabled is 'false: evaluated as disabled, never fires.';
comment on column pepsi.anomaly_check.updated_at is 'When the check was last changed.';

comment on column pepsi.anomaly_state.check_name is 'The check (pepsi.anomaly_check).';
comment on column pepsi.anomaly_state.state is 'ok, firing, no_data, error or disabled.';
comment on column pepsi.anomaly_state.value is 'The value reported: the subject farthest out when firing, closest to a bound when ok.';
comment on column pepsi.anomaly_state.subject is 'What the value is of (a provider, stage, table ...).';
comment on column pepsi.anomaly_state.detail is 'How many subjects are out of range, or the metric''s error.';
comment on column pepsi.anomaly_state.since is 'Since when the state holds.';
comment on column pepsi.anomaly_state.evaluated_at is 'When the row was last written (an unchanged result writes nothing).';

comment on column pepsi.anomaly_signal.signal_id is 'The signal''s id.';
comment on column pepsi.anomaly_signal.check_name is 'The check that fired (pepsi.anomaly_check).';
comment on column pepsi.anomaly_signal.severity is 'The check''s severity when it started firing.';
comment on column pepsi.anomaly_signal.raised_at is 'When the check started firing.';
comment on column pepsi.anomaly_signal.cleared_at is 'When it stopped firing; NULL while it still fires.';
comment on column pepsi.anomaly_signal.value is 'The value when it started firing.';
comment on column pepsi.anomaly_signal.last_value is 'The latest value while firing.';
comment on column pepsi.anomaly_signal.subject is 'The latest subject out of range.';
comment on column pepsi.anomaly_signal.detail is 'The latest detail (how many subjects are out of range).';

comment on column pepsi.config_key.section_kind is 'Where the key belongs: pepsi, pepsi-postgres, pepsi-dispatch, stage (any [stage-*]), stage-own (a built-in program''s own key), or a rule on option names: name-part (contains key), name-suffix (ends in key).';
comment on column pepsi.config_key.key is 'The key (upper case), or the name part of a rule.';
comment on column pepsi.config_key.type is 'string, bool, int, duration, stage, tristate, option-list or any.';
comment on column pepsi.config_key.min is 'The smallest value allowed (int; duration: in milliseconds); NULL: no bound.';
comment on column pepsi.config_key.max is 'The largest value allowed (int; duration: in milliseconds); NULL: no bound.';
comment on column pepsi.config_key.default_value is 'The value when unset, as pepsi.conf would spell it; NULL: none.';
comment on column pepsi.config_key.required is 'true: the section must set it.';
comment on column pepsi.config_key.operator_only is 'true: only an operator may set it, never an end user''s settings message (runs code, names a URL, carries a credential, routes messages).';
comment on column pepsi.config_key.secret is 'true: the value is a credential (a password, a token, a key).';
comment on column pepsi.config_key.per_address is 'true: it may be overridden per address (pepsi.settings).';
comment on column pepsi.config_key.reloadable is 'true: a reload applies it without a restart.';
comment on column pepsi.config_key.doc is 'One line of documentation.';

comment on column pepsi.config_override.section is 'The overlaid section: stage-<name>.';
comment on column pepsi.config_override.key is 'The key (upper case), or * to remove the whole section (then value is NULL).';
comment on column pepsi.config_override.value is 'The value laid over the file''s; NULL takes the key out of the file''s section.';
comment on column pepsi.config_override.updated_at is 'When the row was last written.';
comment on column pepsi.config_override.updated_by is 'The session user who wrote it.';

-- ---- columns of the tables only the schema owner (and some duty roles)
-- read: pepsi_reader sees messages through pepsi.messages, never bodies,
-- payloads or secrets ----

comment on column pepsi.workqueue_body.body_id is 'The body''s id; workqueue.body_id refers to it (split siblings share one).';
comment on column pepsi.workqueue_body.headers is 'The message''s header block as the producer handed it in (at most 1 MiB); NULL: none.';
comment on column pepsi.workqueue_body.body is 'The message body, raw bytes (at most 64 MiB); NULL: none.';
comment on column pepsi.workqueue_body.created_at is 'When it was written; workqueue_body_gc leaves bodies younger than a minute alone.';

comment on column pepsi.workqueue.workqueue_id is 'The message''s id, assigned at injection.';
comment on column pepsi.workqueue.tube is 'The named queue it belongs to (beanstalkd''s rule, 1 to 200 bytes; default ''default''): its partition and owner slot follow from it.';
comment on column pepsi.workqueue.stage is 'The stage it waits at (pending, paused), runs at (running) or stopped at (failed, timeout).';
comment on column pepsi.workqueue.status is 'pending (to be claimed), running (at a worker), paused (until timeout), failed or timeout (terminal until an operator resumes it).';
comment on column pepsi.workqueue.origin_user is 'The authenticated user (login) that submitted it, webhook:<provider> or backfill:<provider>; NULL: none.';
comment on column pepsi.workqueue.origin_addr is 'The SMTP peer''s address it came from; NULL: unknown or local.';
comment on column pepsi.workqueue.recipients is 'The envelope recipients (at most 1000 addresses).';
comment on column pepsi.workqueue.header_from is 'The From header (at most 998 bytes); NULL: none given.';
comment on column pepsi.workqueue.subject is 'The Subject header (at most 998 bytes).';
comment on column pepsi.workqueue.state is 'The message''s JSON object state: keys the producer and stages set, and pepsi''s own (hops, strikes, last_error, failed_stage, failure_class, pause_reason, temporary_failures). At most 1 MiB.';
comment on column pepsi.workqueue.body_id is 'Its body and header block in pepsi.workqueue_body; NULL: none.';
comment on column pepsi.workqueue.arrived_at is 'When it was queued (MAX_LIFETIME counts from here unless state.generated_at says otherwise).';

comment on column pepsi.tube_pause.tube is 'The paused tube: its rows are not claimed until paused_until.';
comment on column pepsi.tube_pause.paused_at is 'When the pause was set (pepsi.tube_pause).';
comment on column pepsi.tube_pause.paused_until is 'When it ends; an expired row means nothing and is swept.';

comment on column pepsi.webhook_provider.provider is 'The name: the <provider> of POST /hooks/<provider> (a stage-name-like word).';
comment on column pepsi.webhook_provider.scheme is 'Signature scheme: standard-webhooks, stripe, github, slack, shopify or hmac-sha256.';
comment on column pepsi.webhook_provider.signature_header is 'hmac-sha256 only: the header carrying the signature.';
comment on column pepsi.webhook_provider.signature_encoding is 'hmac-sha256 only: hex or base64.';
comment on column pepsi.webhook_provider.signature_prefix is 'hmac-sha256 only: text before the signature value (e.g. sha256=), at most 100 bytes.';
comment on column pepsi.webhook_provider.tube is 'Tube of the messages made from new events.';
comment on column pepsi.webhook_provider.enabled is 'false: the ingress refuses the provider''s requests (404).';
comment on column pepsi.webhook_provider.created_at is 'When the provider was added.';
comment on column pepsi.webhook_provider.updated_at is 'When the provider was last changed.';

comment on column pepsi.webhook_events.webhook_event_id is 'The event''s id; workqueue.webhook_event_id links its message to it.';
comment on column pepsi.webhook_events.external_id is 'The provider''s id of the event (1 to 1024 bytes), from the provider''s id source; unique per provider: the seen-check.';

comment on column pepsi.webhook_event_refresh.refresh_id is 'The recorded delivery''s id.';
comment on column pepsi.webhook_event_refresh.webhook_event_id is 'The event whose row was locked when the delivery came.';
comment on column pepsi.webhook_event_refresh.payload is 'The redelivered request body.';
comment on column pepsi.webhook_event_refresh.headers is 'The redelivered request headers (a JSON object).';
comment on column pepsi.webhook_event_refresh.received_at is 'When the ingress received the redelivery.';
comment on column pepsi.webhook_event_refresh.recorded_at is 'When it was recorded here.';

comment on column pepsi.fair_lead.stage is 'The stage the lead is for.';
comment on column pepsi.fair_lead.sender_key is 'The sender (workqueue.sender_key) the lead is for.';

comment on column pepsi.fair_stage.stage is 'A stage whose leads pepsi.fair_lead holds in full.';
comment on column pepsi.fair_stage.incarnation is 'The dispatcher incarnation that sent them all (p_lead_sync); another one means the leads are lost.';

commit;
