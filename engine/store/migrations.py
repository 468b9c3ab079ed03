"""The run store's schema, as numbered, forward-only migrations (applied at connect, in
engine/store/connection.py, each once, recorded in the schema_version table).

Append-only: never edit an applied migration; add the next number at the end of MIGRATIONS. A
migration is SQL text, or a function of the connection where SQL cannot do it alone (9).
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from searchgrade.engine.store.judged_recompute import judged_over_k
from searchgrade.engine.store.relevance_recompute import divide_by_k

# Numbered, forward-only. Never edit an applied migration: add the next one.
MIGRATIONS: tuple[tuple[int, str | Callable[[duckdb.DuckDBPyConnection], None]], ...] = (
    (
        1,
        """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            collection_name VARCHAR NOT NULL,
            collection_path VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            status VARCHAR NOT NULL,
            stage VARCHAR,
            mode VARCHAR NOT NULL,
            label_source VARCHAR NOT NULL,
            grade_min INTEGER,
            grade_max INTEGER,
            threshold INTEGER NOT NULL,
            k INTEGER NOT NULL,
            depth INTEGER NOT NULL,
            config JSON NOT NULL,
            timings JSON,
            skipped JSON,
            stats JSON,
            notes JSON,
            error VARCHAR,
            pid INTEGER,
            host VARCHAR
        );
        CREATE TABLE queries (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            query_type VARCHAR NOT NULL,
            source_doc_id VARCHAR,
            PRIMARY KEY (run_id, query_id)
        );
        CREATE TABLE results (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            doc_id VARCHAR NOT NULL,
            score DOUBLE NOT NULL,
            latency_ms DOUBLE NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id, rank)
        );
        CREATE TABLE grades (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            grade INTEGER,
            source VARCHAR NOT NULL,
            model VARCHAR,
            prompt_version VARCHAR,
            reason VARCHAR,
            PRIMARY KEY (run_id, query_id, doc_id)
        );
        CREATE TABLE documents (
            run_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            title VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            PRIMARY KEY (run_id, doc_id)
        );
        CREATE TABLE metric_values (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            value DOUBLE NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id, metric, k)
        );
        CREATE TABLE metric_summary (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            value DOUBLE NOT NULL,
            ci_low DOUBLE NOT NULL,
            ci_high DOUBLE NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (run_id, strategy, metric, k)
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE llm_cache (
            kind VARCHAR NOT NULL,
            cache_key VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            payload JSON NOT NULL,
            created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (kind, cache_key)
        );
        CREATE TABLE llm_usage (
            run_id VARCHAR NOT NULL,
            stage VARCHAR NOT NULL,
            requests BIGINT NOT NULL DEFAULT 0,
            ok BIGINT NOT NULL DEFAULT 0,
            failures BIGINT NOT NULL DEFAULT 0,
            invalid_replies BIGINT NOT NULL DEFAULT 0,
            retries BIGINT NOT NULL DEFAULT 0,
            cache_hits BIGINT NOT NULL DEFAULT 0,
            prompt_tokens BIGINT NOT NULL DEFAULT 0,
            completion_tokens BIGINT NOT NULL DEFAULT 0,
            latency_s DOUBLE NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, stage)
        );
        """,
    ),
    (
        3,
        """
        CREATE TABLE labels (
            label_id VARCHAR PRIMARY KEY,
            collection_name VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            query_text VARCHAR,
            doc_id VARCHAR NOT NULL,
            content_hash VARCHAR,
            grade INTEGER NOT NULL,
            rater VARCHAR NOT NULL,
            note VARCHAR,
            origin VARCHAR NOT NULL,
            run_id VARCHAR,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE review_queues (
            queue_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            mode VARCHAR NOT NULL,
            size INTEGER NOT NULL,
            k INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            created_at TIMESTAMP NOT NULL,
            created_by VARCHAR
        );
        CREATE TABLE review_items (
            queue_id VARCHAR NOT NULL,
            position INTEGER NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            stratum VARCHAR,
            PRIMARY KEY (queue_id, position)
        );
        CREATE TABLE review_skips (
            queue_id VARCHAR NOT NULL,
            position INTEGER NOT NULL,
            rater VARCHAR NOT NULL,
            skipped_at TIMESTAMP NOT NULL,
            PRIMARY KEY (queue_id, position, rater)
        );
        CREATE TABLE query_overlap (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            term_overlap DOUBLE NOT NULL,
            longest_span INTEGER NOT NULL,
            PRIMARY KEY (run_id, query_id)
        );
        ALTER TABLE runs ADD COLUMN parent_run_id VARCHAR;
        ALTER TABLE grades ADD COLUMN llm_grade INTEGER
        """,
    ),
    (
        4,
        # The run lifecycle: whoever runs a run beats its heartbeat and owns it by a token; a run
        # whose heartbeat stops is interrupted; another process (the app) may ask it to cancel.
        """
        ALTER TABLE runs ADD COLUMN heartbeat_at TIMESTAMP;
        ALTER TABLE runs ADD COLUMN owner VARCHAR;
        ALTER TABLE runs ADD COLUMN cancel_requested BOOLEAN DEFAULT false;
        UPDATE runs SET heartbeat_at = coalesce(finished_at, created_at), cancel_requested = false;
        """,
    ),
    (
        5,
        # One row per complete run, strategy, metric and cut-off, with what a trend point shows
        # about its run: Trends read this table alone (no join, no per-run reads), however many
        # runs there are. Written when a run completes (runs.finish_run); filled here for the
        # runs that completed before it existed.
        """
        CREATE TABLE run_summary (
            run_id VARCHAR NOT NULL,
            collection_name VARCHAR NOT NULL,
            name VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            strategy VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            value DOUBLE NOT NULL,
            ci_low DOUBLE NOT NULL,
            ci_high DOUBLE NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (run_id, strategy, metric, k)
        );
        INSERT INTO run_summary
        SELECT r.run_id, r.collection_name, r.name, r.created_at, s.strategy, s.metric, s.k,
               s.value, s.ci_low, s.ci_high, s.n
        FROM metric_summary s JOIN runs r USING (run_id) WHERE r.status = 'complete'
        """,
    ),
    (
        6,
        # Backends (issue 8): a query a strategy failed on, left out of its metrics and retried by
        # resume; a document a backend described that is not in the collection keeps its origin.
        """
        CREATE TABLE failed_queries (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            error VARCHAR NOT NULL,
            attempts INTEGER NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id)
        );
        ALTER TABLE documents ADD COLUMN origin VARCHAR;
        """,
    ),
    (
        7,
        # The Results page's paired tests of a complete run at one metric and cut-off, as JSON
        # (viewmodels/significance.py): 5,000 resamples over every query are the slowest part
        # of a cold Results page, and a complete run's metrics never change. Written when a run
        # completes (its headline metric) and when a page first computes another one.
        """
        CREATE TABLE paired_tests (
            run_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            tests VARCHAR NOT NULL,
            PRIMARY KEY (run_id, metric, k)
        )
        """,
    ),
    (
        8,
        # A complete run's other Results reads (viewmodels/results_cache.py), as JSON: the position
        # curve, failed top-1 counts, latency, relevant documents never retrieved, best and worst
        # queries, per-query-type means and the reranker table. Each is a scan and join of the
        # run's results, grades or per-query metrics (tens of thousands of rows per 1,000
        # queries) whose answer never changes once the run is complete. Written when a run
        # completes (its first Results page) and on a page's first read of one that is not kept
        # yet: runs that completed before this migration get theirs on their first view.
        """
        CREATE TABLE kept_reads (
            run_id VARCHAR NOT NULL,
            part VARCHAR NOT NULL,
            key VARCHAR NOT NULL,
            value VARCHAR NOT NULL,
            PRIMARY KEY (run_id, part, key)
        )
        """,
    ),
    # Issue 22: mean relevance and the relevance shares divide by k (a missing result counts 0);
    # stored runs are recomputed from their results and grades, with a note, and every kept paired
    # test and Results read is cleared (the one statistical procedure replaced Holm's): see
    # engine/store/relevance_recompute.py.
    (9, divide_by_k),
    (
        11,
        # Strategies added from the browser ("Add your search", engine/store/strategies.py): one
        # [strategy.NAME] table per name as it was typed (env: names, never secrets), checked again
        # whenever it is read, with where it was typed ("app" or "exposed app": core/outbound.py's
        # policy holds it wherever it runs).
        """
        CREATE TABLE saved_strategies (
            name VARCHAR PRIMARY KEY,
            kind VARCHAR NOT NULL,
            declaration JSON NOT NULL,
            declared_in VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )
        """,
    ),
    (
        12,
        # Evaluation suites (issue 23, engine/store/suites.py): a suite is a saved, repeatable
        # evaluation (the source run's configuration and frozen query ids), with its schedule
        # (UTC), its alert channels (typed targets, never secrets) and whether its backend is in an
        # outage. suite_runs: one row per evaluation of a suite (manual or a schedule's slot), with
        # the configuration snapshot it ran with, what changed since the previous one, the paired
        # verdict against the previous complete run, and a person's note. suite_slots: the lease of
        # a schedule's due slot (one row per slot: two workers cannot both insert it). suite_alerts:
        # every alert sent or failed, per channel.
        """
        CREATE TABLE suites (
            name VARCHAR PRIMARY KEY,
            collection_name VARCHAR NOT NULL,
            collection_path VARCHAR NOT NULL,
            source_run_id VARCHAR NOT NULL,
            mode VARCHAR NOT NULL,
            config JSON NOT NULL,
            query_ids JSON NOT NULL,
            metric VARCHAR NOT NULL,
            margin DOUBLE NOT NULL,
            schedule_kind VARCHAR,
            schedule_expr VARCHAR,
            schedule_anchor TIMESTAMP,
            webhook VARCHAR,
            email VARCHAR,
            alerts_declared_in VARCHAR,
            outage BOOLEAN NOT NULL DEFAULT false,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE TABLE suite_runs (
            entry_id VARCHAR PRIMARY KEY,
            suite_name VARCHAR NOT NULL,
            run_id VARCHAR,
            slot TIMESTAMP,
            trigger VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            baseline_run_id VARCHAR,
            snapshot JSON,
            changes JSON,
            verdict JSON,
            error VARCHAR,
            note VARCHAR,
            created_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP
        );
        CREATE TABLE suite_slots (
            suite_name VARCHAR NOT NULL,
            slot TIMESTAMP NOT NULL,
            worker VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            entry_id VARCHAR,
            note VARCHAR,
            leased_at TIMESTAMP NOT NULL,
            PRIMARY KEY (suite_name, slot)
        );
        CREATE TABLE suite_alerts (
            alert_id VARCHAR PRIMARY KEY,
            suite_name VARCHAR NOT NULL,
            entry_id VARCHAR,
            kind VARCHAR NOT NULL,
            channel VARCHAR NOT NULL,
            target VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            attempts INTEGER NOT NULL,
            error VARCHAR,
            text VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL
        )
        """,
    ),
    (
        13,
        # Query logs and clicks (issue 26). A log is kept as its distinct normalised queries with
        # their counts (never its rows, never a query below the privacy floor); a query set is a
        # seeded sample of a log with each query's count, band and design weight; click stats are
        # a log's events aggregated per (query, document, position). No primary keys on the two
        # large tables: a log of millions of rows is inserted in bulk, and the import's GROUP BY
        # already makes each row unique.
        """
        CREATE TABLE query_logs (
            log_name VARCHAR PRIMARY KEY,
            collection_name VARCHAR,
            source VARCHAR NOT NULL,
            layout VARCHAR NOT NULL,
            columns JSON NOT NULL,
            rows_read BIGINT NOT NULL,
            searches BIGINT NOT NULL,
            queries BIGINT NOT NULL,
            kept_queries BIGINT NOT NULL,
            kept_searches BIGINT NOT NULL,
            min_count INTEGER NOT NULL,
            min_users INTEGER NOT NULL,
            has_users BOOLEAN NOT NULL,
            first_seen TIMESTAMP,
            last_seen TIMESTAMP,
            created_at TIMESTAMP NOT NULL,
            notes JSON
        );
        CREATE TABLE query_log_queries (
            log_name VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            text VARCHAR NOT NULL,
            searches BIGINT NOT NULL,
            users BIGINT,
            first_seen TIMESTAMP,
            last_seen TIMESTAMP
        );
        CREATE TABLE query_log_ids (
            log_name VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            rank INTEGER
        );
        CREATE TABLE query_sets (
            set_name VARCHAR PRIMARY KEY,
            log_name VARCHAR NOT NULL,
            collection_name VARCHAR,
            method VARCHAR NOT NULL,
            size INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            head_share DOUBLE NOT NULL,
            torso_share DOUBLE NOT NULL,
            searches BIGINT NOT NULL,
            log_searches BIGINT NOT NULL,
            log_queries BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE query_set_queries (
            set_name VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            log_rank INTEGER NOT NULL,
            searches BIGINT NOT NULL,
            band VARCHAR NOT NULL,
            weight DOUBLE NOT NULL,
            stratum VARCHAR NOT NULL,
            fixed BOOLEAN NOT NULL,
            PRIMARY KEY (set_name, query_id)
        );
        CREATE TABLE click_logs (
            log_name VARCHAR PRIMARY KEY,
            source VARCHAR NOT NULL,
            layout VARCHAR NOT NULL,
            events BIGINT NOT NULL,
            clicks BIGINT NOT NULL,
            impressions BIGINT NOT NULL,
            pairs BIGINT NOT NULL,
            skipped_events BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE click_stats (
            log_name VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            doc_id VARCHAR NOT NULL,
            position INTEGER NOT NULL,
            impressions BIGINT NOT NULL,
            clicks BIGINT NOT NULL
        )
        """,
    ),
    (
        14,
        # Tuning (issue 25): a study per `searchgrade tune` of one strategy of a run, and its trials,
        # each stored as it ends so a tuning resumes (engine/store/tuning.py).
        """
        CREATE TABLE tuning_studies (
            study_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            space JSON NOT NULL,
            seed INTEGER NOT NULL,
            split JSON NOT NULL,
            status VARCHAR NOT NULL,
            report JSON,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE TABLE tuning_trials (
            study_id VARCHAR NOT NULL,
            fold INTEGER NOT NULL,
            number INTEGER NOT NULL,
            params JSON NOT NULL,
            value DOUBLE NOT NULL,
            judged DOUBLE NOT NULL,
            p95_ms DOUBLE NOT NULL,
            calls INTEGER NOT NULL,
            seconds DOUBLE NOT NULL,
            created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (study_id, fold, number)
        )
        """,
    ),
    (
        15,
        # Incomplete judgments (issue 28): the judgments a run's qrels mark as in the judging pool
        # but not judged (a negative grade, trec_eval's RELVALUE_UNJUDGED, the -1 of infAP's sampled
        # qrels). Their grades row says 0 (not relevant, as every standard metric counts them);
        # bpref, the condensed lists, infAP and the RBP residual read them as holes from here.
        """
        CREATE TABLE pooled_unjudged (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            PRIMARY KEY (run_id, query_id, doc_id)
        )
        """,
    ),
    # Issue 32: judged@k divides by k (a place no result holds is not judged), as P@k does; stored
    # runs' values are recomputed from the old ones, with a note, and kept tests and reads cleared:
    # see engine/store/judged_recompute.py.
    (16, judged_over_k),
    (
        17,
        # Judges you can trust (issue 35, engine/store/judges.py). judge_grades: each judge's raw
        # 0-3 grade of each pair it judged, by judge name (a model on the run's endpoint, NAME@URL,
        # or "panel", the grade the run's panel gave), NULL when the judgment failed (reason says
        # why); runs with one judge and no row here keep theirs in grades.llm_grade, as before.
        # judge_repeats: the grades `searchgrade judges RUN --repeat N` asked again (test-retest);
        # judge_calibrations: a judge prompt with people's rated examples, evaluated cross-fitted,
        # its report and whether it was kept.
        """
        CREATE TABLE judge_grades (
            run_id VARCHAR NOT NULL,
            judge VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            grade INTEGER,
            reason VARCHAR,
            prompt_version VARCHAR,
            PRIMARY KEY (run_id, judge, query_id, doc_id)
        );
        CREATE TABLE judge_repeats (
            run_id VARCHAR NOT NULL,
            judge VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            repetition INTEGER NOT NULL,
            grade INTEGER,
            created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (run_id, judge, query_id, doc_id, repetition)
        );
        CREATE TABLE judge_calibrations (
            calibration_id VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            judge VARCHAR NOT NULL,
            prompt_name VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            prompt_text VARCHAR NOT NULL,
            report JSON NOT NULL,
            kept BOOLEAN NOT NULL,
            created_at TIMESTAMP NOT NULL
        )
        """,
    ),
    (
        18,
        # Why queries fail (issue 34, engine/failures/): the run's query vectors (from the ANN's
        # embedding model: failure groups and their 2-D map), and, for the queries an ANN-based
        # strategy failed on, the exact search of the same vectors (each of its top results, and
        # whether the approximate index's top list holds it: lost_by_index's evidence). A strategy
        # added in the app records the collection it was added for (NULL: saved before, any).
        """
        ALTER TABLE saved_strategies ADD COLUMN collection_name VARCHAR;
        CREATE TABLE query_vectors (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            vector FLOAT[] NOT NULL,
            PRIMARY KEY (run_id, query_id)
        );
        CREATE TABLE exact_search (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            doc_id VARCHAR NOT NULL,
            in_index BOOLEAN NOT NULL,
            PRIMARY KEY (run_id, query_id, rank)
        )
        """,
    ),
    (
        19,
        # Team-draft interleaving results (issue 36): per query of a log and pair of systems (kept in
        # one order, the smaller name first), the interleaved searches each system's clicks won, the
        # ties (both credited alike, at least one click) and every interleaved search.
        """
        CREATE TABLE interleaving_logs (
            log_name VARCHAR PRIMARY KEY,
            source VARCHAR NOT NULL,
            searches BIGINT NOT NULL,
            skipped_rows BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL
        );
        CREATE TABLE interleaving_results (
            log_name VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            system_a VARCHAR NOT NULL,
            system_b VARCHAR NOT NULL,
            wins_a BIGINT NOT NULL,
            wins_b BIGINT NOT NULL,
            ties BIGINT NOT NULL,
            searches BIGINT NOT NULL
        )
        """,
    ),
    (
        20,
        # Chunked strategies (issue 37, indexes/variants/): for each listed document, the chunk it was
        # matched by (its place in the document and its character span in the document's text), for
        # the drill-down; written, cleared and copied with the results they belong to.
        """
        CREATE TABLE result_passages (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            chunk INTEGER NOT NULL,
            start_char INTEGER NOT NULL,
            end_char INTEGER NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id, doc_id)
        )
        """,
    ),
)
