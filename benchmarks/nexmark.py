"""Nexmark-shaped benchmark of sqlwin's streaming mode: q5, q7, q8 and q11 against native Spark.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/nexmark.py \\
        [--events 2400000] [--batches 24] [--warmup-batches 2] [--rate 10000] [--only q5 ...] \\
        [--per-key] [--out-of-order N] [--shuffle-partitions 2] [--no-native] [--keep] \\
        [--flink /work/flinkenv/bin/python]

Data. A NumPy generator of Nexmark's three streams with the distributions of the Nexmark
generator (nexmark/nexmark's Flink generator and Beam's, read for their rules, not copied):
event n is a person, an auction or a bid by n mod 50 (1 : 3 : 46); its time is base + n / rate
(`--rate` events per second of event time, default 10,000, Nexmark's default first event rate);
the k-th person / auction has id 1000 + k; an auction's seller is with probability 3/4 the hot
seller (the first of the newest group of 100 people), else one of the 1,000 newest people (or up
to 10 ids ahead); a bid's auction is with probability 1/2 the hot auction (the first of the newest
group of 100 auctions), else one of the 100 newest auctions (+10 ahead); its bidder with
probability 3/4 the hot bidder (the second of the newest group of 100 people), else an active
person; prices 10^(6u) * 100 cents; an auction expires after up to twice the time 100 more
auctions take; 5 categories; half the bids on one of 4 hot channels, the rest on 10,000 others;
names, cities, states, emails, credit cards and the `extra` padding to Nexmark's average event
sizes (person 200, auction 500, bid 100 bytes). Differences: Flink's BidGenerator adds the
first person id to the bidder twice (bidders start at 2000), here once; random strings never
start or end with a space where Nexmark trims them; `--out-of-order N` scrambles each group of N
events as Nexmark's outOfOrderGroupSize (default 1: in order, so no row is ever late). The
events are split into `--batches` micro-batches (consecutive event numbers), each written as
one parquet file per stream (pyarrow, coerce_timestamps="us") into per-stream directories;
3M events take ~5 s. A default run takes 7-10 min on this 2-core machine.

Queries (benchmarks/nexmark_queries/*.sql, sqlwin SQL, each with a 5 s watermark delay and no
PARTITION BY, i.e. one clock for the stream as Flink's and Spark's watermark):
- q5 hot items: bids per auction per HOP (slide 2 s, size 10 s) window -- the stateful part;
  the "auctions with the window's max count" step is a query over the sink, run after the stream.
- q7 highest bid: per TUMBLE 10 s the max price and, by max_by, that bid (one windowed
  aggregation, no key; Flink joins the bids with the window max).
- q8 new users: persons who created an auction in the TUMBLE 10 s window they entered: a
  windowed join of person and auction, join_insert = 'first' (one row per side, key, window).
- q11 user sessions: bids per bidder per SESSION (gap 10 s).
`--per-key` adds q5k and q11k: the same with PARTITION BY auction / bidder (a clock per key,
which lets sqlwin spread keys over buckets; one clock runs in one bucket, one Python worker).

Run. One local[2] SparkSession as sqlwin.session makes it (RocksDB state), per query a sqlwin
stream (`sw.stream`, file sources with maxFilesPerTrigger 1, parquet sink) and, in the same
run, the Structured Streaming query a Spark engineer would write (append mode, parquet sink):
q5 `window(dateTime, '10 seconds', '2 seconds')` + count, q7 `window` + max / max_by, q11
`session_window` (gap 10 s - 1 µs: sqlwin, like its docs, opens a new session at a bid exactly
one gap after the previous, Spark and Flink merge those), q8 a stream-stream inner join on
id = seller and the window struct after dropDuplicates(seller, window) (Spark accepts it; it
emits each pair as soon as both sides are there, sqlwin at the window's close). Each engine
has its own source directory; micro-batch i is fed to both in turn (who goes first alternates):
single-stream files are hard-linked in under a hidden name and renamed, q8's two files are
linked into one hidden directory renamed at once (sources read `<dir>/*/person.parquet`; a
trigger that lists one source before the rename and the other after runs the two files in two
Spark micro-batches, rarely), and each engine's process-all-available is timed. The first `--warmup-batches` of each query are
left out.

Figures, per query:
- events: all Nexmark events (person + auction + bid) of the measured micro-batches, as Nexmark
  counts them (its source generates every event and the query filters); here the engines read
  only the streams the query uses (q8: 8 % of the events), so per-event figures do not include
  generating or decoding the other streams as Flink's do.
- seconds: the summed wall time of the measured micro-batches; events/s = events / seconds.
- per core: events/s / 2 (local[2] on this 2-core machine, shared with whatever else runs:
  the load average is printed).
- ev/CPU-s: events per CPU-second of this process tree (driver, JVM, Python workers), Nexmark's
  own notion of cores (CPU used), insensitive to other processes' load.
- Flink/core: Flink 1.13's published Throughput/Cores (nexmark README: q5 22.14k, q7 12.33k,
  q8 146.14k, q11 39.7k events/s per core, 100M events at 10M events/s on 8-core machines) and
  vs Flink = per core / that. Not like for like: other hardware, other scale (Flink's 100M
  events span 10 s of event time at 10M events/s; here 2.4M span 240 s at 10k events/s, so
  windows close throughout the run), and Flink's figure includes generating the events.
- native ev/s and vs native: native Spark's events/s over the same files, and sqlwin / native.
- agrees: sqlwin's and native's results against a plain Spark SQL batch computation over all
  the events (q5 window counts; q7 the window max and that max_by named a bid at the top price;
  q8 a batch join of per-window persons and distinct sellers; q11 sessions by gaps and islands),
  on the windows that ended >= 1 s before the final watermark (both engines closed them all).
- Flink2.3 ev/s and vs Flink2.3 (with --flink): Flink 2.3's events/s over the same events on
  this machine, and sqlwin events/s / that -- the figure to keep raising. Flink agrees: Flink's
  rows against the same reference (see below).

Flink 2.3. `benchmarks/flink_setup.sh [/work/flinkenv]` makes a venv of its own with
apache-flink==2.3.0 (PyFlink pins py4j, numpy and pandas versions that clash with pyspark: not
.venv); Java 17 runs it. `--flink /work/flinkenv/bin/python` (or SQLWIN_FLINK_PYTHON) runs
benchmarks/flink_nexmark.py with it after the Spark runs, over the same generated directory
(its docstring has the details): the parquet batches converted with pyarrow to CSV (the wheel
has the filesystem connector with csv / json, no parquet; not timed), the same queries in Flink
SQL with window TVFs (q5 HOP count, q7 TUMBLE max joined back to the window's bids -- Flink has
no MAX_BY --, q8 window join of the per-window persons and sellers, q11 SESSION PARTITION BY
bidder), `WATERMARK FOR dateTime AS dateTime - INTERVAL '5' SECOND`, streaming mode, parallelism
2, CSV sinks. Timing differs from the Spark engines': per query one untimed Flink job over the
warm-up batches, then one timed job over the measured batches from `execute_sql` (planning,
MiniCluster start, submission) to the job's end, the bounded file source ending the job once
its files are read; at the end of input Flink's final watermark fires every open window, so
its time includes emitting the last windows, where sqlwin's and native's summed
process-all-available times of the micro-batches stop at the last batch's watermark. The
timed job starts with no state (the warm-up job's is not carried over) and includes the job's
fixed cost (a few seconds: plan, start, deploy, finish), which sqlwin's stream start is not in.
Flink's rows are checked on the windows whose events are all in the timed job (starting after
the newest warm-up event; sessions 10 s after it) that the Spark engines closed too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# --------------------------------------------------------------------------- the generator
#
# Nexmark's event model (the Flink and Beam generators, read for their distributions; nothing
# copied): a single sequence of event numbers n = 0, 1, 2, ...; event n is a person, an auction
# or a bid by n mod 50 (1 : 3 : 46); its timestamp is base + n / rate; ids are derived from the
# event number (the k-th person has id 1000 + k, the k-th auction 1000 + k), so each event knows
# "the newest person" and "the newest auction" without any state, and every micro-batch can be
# generated on its own.

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10  # a random person may be up to 10 ids ahead of the newest (not created yet)
AUCTION_ID_LEAD = 10
HOT_GROUP = 100  # hot sellers / bidders / auctions: the first of each group of the last 100 ids
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
             "Kent", "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS = 10_000


@dataclass(frozen=True)
class NexmarkConfig:
    """Nexmark's generator settings (NexmarkConfiguration's defaults, but the rate)."""

    events: int
    rate: float = 10_000.0  # events per second of event time (Nexmark's firstEventRate default)
    base_time_ms: int = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC, the first event's time
    hot_auction_ratio: int = 2  # P(bid on the hot auction) = 1 - 1/2
    hot_sellers_ratio: int = 4  # P(auction by the hot seller) = 1 - 1/4
    hot_bidders_ratio: int = 4  # P(bid by the hot bidder) = 1 - 1/4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    out_of_order_group: int = 1  # 1: in order; n: each group of n events in a scrambled order
    seed: int = 42

    @property
    def delay_us(self) -> float:
        return 1_000_000.0 / self.rate

    def timestamp_ms(self, number: np.ndarray) -> np.ndarray:
        """Event time (epoch ms) of event number `number`: the rate spaces events evenly."""
        return self.base_time_ms + np.floor(number * self.delay_us / 1000.0).astype(np.int64)

    def adjusted(self, number: np.ndarray) -> np.ndarray:
        """The event number an event carries when out_of_order_group > 1: scrambled within its group."""
        g = self.out_of_order_group
        return number if g == 1 else (number // g) * g + (number * 953) % g


def last_person(event_id: np.ndarray) -> np.ndarray:
    """Base-0 id of the newest person at this event (the event's own id when it is a person)."""
    epoch, offset = np.divmod(event_id, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + np.minimum(offset, PERSON_PROPORTION - 1)


def last_auction(event_id: np.ndarray) -> np.ndarray:
    """Base-0 id of the newest auction at this event (the event's own id when it is an auction);
    -1 before the first auction."""
    epoch, offset = np.divmod(event_id, TOTAL_PROPORTION)
    before = offset < PERSON_PROPORTION  # a person: the previous epoch's last auction
    in_epoch = np.clip(offset - PERSON_PROPORTION, 0, AUCTION_PROPORTION - 1)
    return np.where(before, (epoch - 1) * AUCTION_PROPORTION + AUCTION_PROPORTION - 1,
                    epoch * AUCTION_PROPORTION + in_epoch)


def random_person(rng, event_id: np.ndarray, config: NexmarkConfig) -> np.ndarray:
    """A random one of the active people (the newest num_active_people), or up to 10 ids ahead."""
    people = last_person(event_id) + 1
    active = np.minimum(people, config.num_active_people)
    return people - active + (rng.random(len(event_id)) * (active + PERSON_ID_LEAD)).astype(np.int64)


def random_auction(rng, event_id: np.ndarray, config: NexmarkConfig) -> np.ndarray:
    """A random one of the auctions likely still open (the newest num_in_flight_auctions), or up to 10 ahead."""
    newest = np.maximum(last_auction(event_id), 0)
    lowest = np.maximum(newest - config.num_in_flight_auctions, 0)
    span = newest - lowest + 1 + AUCTION_ID_LEAD
    return lowest + (rng.random(len(event_id)) * span).astype(np.int64)


def prices(rng, count: int) -> np.ndarray:
    """Nexmark's price (cents): 10^(6u) * 100, u uniform; log-uniform from $1 to $1M."""
    return np.round(np.power(10.0, rng.random(count) * 6.0) * 100.0).astype(np.int64)


def _string_array(lengths: np.ndarray, data: np.ndarray):
    import pyarrow as pa

    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.LargeStringArray.from_buffers(len(lengths), pa.py_buffer(offsets), pa.py_buffer(data)).cast(pa.string())


def random_strings(rng, count: int, max_length: int, special: str = " "):
    """Nexmark's random strings: 3 .. max_length-1 letters, each 1 in 13 `special`, never at
    either end (Nexmark trims them; here the ends are letters)."""
    lengths = 3 + (rng.random(count) * (max_length - 3)).astype(np.int64)
    total = int(lengths.sum())
    data = (rng.integers(0, 26, total, dtype=np.uint8) + ord("a")).astype(np.uint8)
    data[rng.integers(0, 13, total) == 0] = ord(special)
    ends = np.cumsum(lengths)
    data[ends - 1] = rng.integers(0, 26, count, dtype=np.uint8) + ord("a")
    data[ends - lengths] = rng.integers(0, 26, count, dtype=np.uint8) + ord("a")
    return _string_array(lengths, data), lengths


class Extras:
    """Nexmark's padding column `extra`: a substring of one random 1 MiB text, long enough that
    the event averages its configured size (desired length +- 20 %)."""

    def __init__(self, seed: int):
        self.text = (np.random.default_rng([seed, 7]).integers(0, 26, 1 << 20, dtype=np.uint8) + ord("a")).astype(
            np.uint8)

    def __call__(self, rng, current_size: np.ndarray, average: int):
        desired = np.maximum(average - current_size, 0)
        delta = np.round(desired * 0.2).astype(np.int64)
        lengths = desired - delta + (rng.random(len(desired)) * 2 * delta).astype(np.int64)
        starts = (rng.random(len(desired)) * (len(self.text) - lengths)).astype(np.int64)
        total = int(lengths.sum())
        row_start = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        data = self.text[row_start + np.arange(total)]
        return _string_array(lengths, data)


def _base_url(rng) -> str:
    def part() -> str:
        return "".join("_" if rng.integers(13) == 0 else chr(ord("a") + rng.integers(26))
                       for _ in range(3 + rng.integers(2)))
    return f"https://www.nexmark.com/{part()}/{part()}/{part()}/item.htm?query=1"


def _bit_reverse_31(i: int) -> int:
    """abs(Integer.reverse(i)) for 0 <= i < 2^31: the channel id Nexmark puts in a channel's url."""
    reversed_ = int(f"{i:032b}"[::-1], 2)
    return abs(reversed_ - (1 << 32) if reversed_ >= 1 << 31 else reversed_)


class Channels:
    """The 4 hot channels with their urls, and 10,000 others ('channel-i'), 9 in 10 with a channel_id in the url."""

    def __init__(self, seed: int):
        import pyarrow as pa

        rng = np.random.default_rng([seed, 11])
        hot_urls = [_base_url(rng) for _ in HOT_CHANNELS]
        names, urls = [], []
        for i in range(CHANNELS):
            url = _base_url(rng)
            if rng.integers(10) > 0:
                url += f"&channel_id={_bit_reverse_31(i)}"
            names.append(f"channel-{i}")
            urls.append(url)
        self.names = pa.array(list(HOT_CHANNELS) + names, pa.string())
        self.urls = pa.array(hot_urls + urls, pa.string())

    def pick(self, rng, count: int):
        """Half the bids on a hot channel (one of 4), half on one of the 10,000 others."""
        hot = rng.integers(0, 2, count) > 0
        index = np.where(hot, rng.integers(0, len(HOT_CHANNELS), count),
                         len(HOT_CHANNELS) + rng.integers(0, CHANNELS, count))
        import pyarrow as pa

        index = pa.array(index)
        return self.names.take(index), self.urls.take(index)


class NexmarkGenerator:
    """The three streams of events numbered [first, last): `batch(first, last)` -> {stream: arrow table}."""

    def __init__(self, config: NexmarkConfig):
        self.config = config
        self.extras = Extras(config.seed)
        self.channels = Channels(config.seed)
        names = [f"{a} {b}" for a in FIRST_NAMES for b in LAST_NAMES]
        import pyarrow as pa

        self.names = pa.array(names, pa.string())
        self.cities = pa.array(US_CITIES, pa.string())
        self.states = pa.array(US_STATES, pa.string())

    def batch(self, first: int, last: int, batch_index: int) -> dict:
        config = self.config
        rng = np.random.default_rng([config.seed, batch_index])
        event_id = config.adjusted(np.arange(first, last, dtype=np.int64))
        # The event's timestamp follows its (possibly scrambled) number: within a group of
        # out_of_order_group events, times arrive out of order.
        time_ms = config.timestamp_ms(event_id)
        kind = event_id % TOTAL_PROPORTION
        is_person = kind < PERSON_PROPORTION
        is_auction = ~is_person & (kind < PERSON_PROPORTION + AUCTION_PROPORTION)
        is_bid = ~is_person & ~is_auction
        return {
            "person": self._persons(rng, event_id[is_person], time_ms[is_person]),
            "auction": self._auctions(rng, event_id[is_auction], time_ms[is_auction]),
            "bid": self._bids(rng, event_id[is_bid], time_ms[is_bid]),
        }

    @staticmethod
    def _timestamps(time_ms: np.ndarray):
        import pyarrow as pa

        return pa.array(time_ms * 1000, pa.timestamp("us", tz="UTC"))

    def _persons(self, rng, event_id, time_ms):
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(event_id)
        name = self.names.take(pa.array(rng.integers(0, len(self.names), n)))
        user, user_len = random_strings(rng, n, 7)
        host, host_len = random_strings(rng, n, 5)
        email = pc.binary_join_element_wise(user, pc.binary_join_element_wise(host, ".com", ""), "@")
        cards = rng.integers(0, 10_000, (n, 4))
        card = pc.binary_join_element_wise(
            *[pc.utf8_lpad(pa.array(cards[:, i]).cast(pa.string()), 4, "0") for i in range(4)], " ")
        city = self.cities.take(pa.array(rng.integers(0, len(US_CITIES), n)))
        state = self.states.take(pa.array(rng.integers(0, len(US_STATES), n)))
        size = (8 + pc.utf8_length(name).to_numpy() + user_len + host_len + 5 + 19
                + pc.utf8_length(city).to_numpy() + 2)
        return pa.table({
            "id": last_person(event_id) + FIRST_PERSON_ID,
            "name": name, "emailAddress": email, "creditCard": card, "city": city, "state": state,
            "dateTime": self._timestamps(time_ms),
            "extra": self.extras(rng, size, self.config.avg_person_bytes),
        })

    def _auctions(self, rng, event_id, time_ms):
        import pyarrow as pa

        config = self.config
        n = len(event_id)
        # 3 in 4 auctions by the hot seller: the first of the newest group of 100 people.
        hot = rng.integers(0, config.hot_sellers_ratio, n) > 0
        seller = np.where(hot, (last_person(event_id) // HOT_GROUP) * HOT_GROUP,
                          random_person(rng, event_id, config)) + FIRST_PERSON_ID
        initial = prices(rng, n)
        # An auction lasts on average as long as it takes to create num_in_flight_auctions more
        # (up to twice that, uniform), so about that many are open at any time.
        ahead = config.num_in_flight_auctions * TOTAL_PROPORTION // AUCTION_PROPORTION
        horizon = config.timestamp_ms(event_id + ahead) - time_ms
        expires = time_ms + 1 + (rng.random(n) * np.maximum(2 * horizon, 1)).astype(np.int64)
        item, item_len = random_strings(rng, n, 20)
        description, description_len = random_strings(rng, n, 100)
        return pa.table({
            "id": last_auction(event_id) + FIRST_AUCTION_ID,
            "itemName": item, "description": description,
            "initialBid": initial, "reserve": initial + prices(rng, n),
            "dateTime": self._timestamps(time_ms), "expires": self._timestamps(expires),
            "seller": seller,
            "category": FIRST_CATEGORY_ID + rng.integers(0, NUM_CATEGORIES, n),
            "extra": self.extras(rng, 8 + item_len + description_len + 40, config.avg_auction_bytes),
        })

    def _bids(self, rng, event_id, time_ms):
        import pyarrow as pa

        config = self.config
        n = len(event_id)
        # Half the bids on the hot auction (the first of the newest group of 100 auctions), the
        # rest on one of the auctions still in flight.
        hot = rng.integers(0, config.hot_auction_ratio, n) > 0
        auction = np.where(hot, (np.maximum(last_auction(event_id), 0) // HOT_GROUP) * HOT_GROUP,
                           random_auction(rng, event_id, config)) + FIRST_AUCTION_ID
        # 3 in 4 bids by the hot bidder: the second of the newest group of 100 people (the first
        # is the hot seller).
        hot = rng.integers(0, config.hot_bidders_ratio, n) > 0
        bidder = np.where(hot, (last_person(event_id) // HOT_GROUP) * HOT_GROUP + 1,
                          random_person(rng, event_id, config)) + FIRST_PERSON_ID
        channel, url = self.channels.pick(rng, n)
        return pa.table({
            "auction": auction, "bidder": bidder, "price": prices(rng, n),
            "channel": channel, "url": url,
            "dateTime": self._timestamps(time_ms),
            "extra": self.extras(rng, np.full(n, 32), config.avg_bid_bytes),
        })


STREAMS = ("person", "auction", "bid")


def generate(config: NexmarkConfig, out: Path, batches: int) -> list[dict]:
    """Write `config.events` events as `batches` micro-batches: out/<stream>/batch-NNNNNN.parquet,
    one file per stream and batch (events numbered evenly across the batches). Returns per batch
    {"first": first event number, "last": one past the last, stream: (path, rows, newest dateTime µs)}."""
    import pyarrow.parquet as pq

    generator = NexmarkGenerator(config)
    for stream in STREAMS:
        (out / stream).mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, config.events, batches + 1).round().astype(np.int64)
    written = []
    for index in range(batches):
        first, last = int(bounds[index]), int(bounds[index + 1])
        tables = generator.batch(first, last, index)
        entry = {"first": first, "last": last}
        for stream, table in tables.items():
            path = out / stream / f"batch-{index:06d}.parquet"
            pq.write_table(table, path, coerce_timestamps="us")
            times = table.column("dateTime").to_numpy().astype("datetime64[us]").astype(np.int64)
            entry[stream] = (path, table.num_rows, int(times.max()) if len(times) else None)
        written.append(entry)
    return written


# --------------------------------------------------------------------------- the queries

QUERIES_DIR = Path(__file__).with_name("nexmark_queries")
DELAY = "5 seconds"
GAP_US = 10_000_000  # q11's session gap
# Flink 1.13's published throughput per core (nexmark/nexmark README, "Benchmark Results":
# 100M events at 10M events/s, 8-core machines, cores = measured CPU usage).
FLINK_PER_CORE = {"q5": 22_140.0, "q7": 12_330.0, "q8": 146_140.0, "q11": 39_700.0}


@dataclass
class Query:
    name: str  # q5, q7, q8, q11; a variant: q5k, q11k
    title: str
    streams: tuple[str, ...]  # the sources the query reads
    sql: str
    native: object  # (F, {stream: streaming DataFrame}) -> streaming DataFrame, or None
    native_note: str
    per_key: bool = False  # a clock per key: sqlwin closes a quiet key's windows only at the end of input

    @property
    def flink(self) -> float:
        return FLINK_PER_CORE[self.name.rstrip("kf")]


def _native_q5(F, frames):
    bids = frames["bid"].withWatermark("dateTime", DELAY)
    return (bids.groupBy("auction", F.window("dateTime", "10 seconds", "2 seconds").alias("w"))
            .agg(F.count("*").alias("num"))
            .select("auction", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "num"))


def _native_q7(F, frames):
    bids = frames["bid"].withWatermark("dateTime", DELAY)
    return (bids.groupBy(F.window("dateTime", "10 seconds").alias("w"))
            .agg(F.max("price").alias("price"), F.max_by("auction", "price").alias("auction"),
                 F.max_by("bidder", "price").alias("bidder"), F.max_by("dateTime", "price").alias("dateTime"))
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                    "price", "auction", "bidder", "dateTime"))


def _native_q8(F, frames):
    # A stream-stream inner join on the key and the window struct (Spark's "join on event-time
    # windows"), with the auctions first deduplicated per seller and window (Flink's q8 GROUP BY
    # seller, window; persons are unique by id already). Spark emits a joined row as soon as both
    # sides are there, not at the window's close; the rows are the same.
    persons = frames["person"].withWatermark("dateTime", DELAY).select(
        "id", "name", F.window("dateTime", "10 seconds").alias("pw"))
    sellers = (frames["auction"].withWatermark("dateTime", DELAY)
               .select("seller", F.window("dateTime", "10 seconds").alias("aw"))
               .dropDuplicates(["seller", "aw"]))
    return (persons.join(sellers, (persons.id == sellers.seller) & (persons.pw == sellers.aw))
            .select("id", "name", F.col("pw.start").alias("window_start")))


def _native_q11(F, frames):
    # sqlwin starts a new session at a bid exactly one gap after the previous one; Spark's
    # session_window (as Flink's) merges those: a gap 1 µs shorter gives sqlwin's sessions.
    bids = frames["bid"].withWatermark("dateTime", DELAY)
    return (bids.groupBy("bidder", F.session_window("dateTime", f"{GAP_US - 1} microseconds").alias("w"))
            .agg(F.count("*").alias("bid_count"))
            .select("bidder", "bid_count", F.col("w.start").alias("starttime"),
                    (F.col("w.end") + F.expr("INTERVAL 1 MICROSECOND")).alias("endtime")))  # last bid + 10 s


def load_queries(per_key: bool) -> list[Query]:
    def sql(name: str) -> str:
        return (QUERIES_DIR / f"{name}.sql").read_text()

    queries = [
        Query("q5", "hot items: bids per auction, HOP 2 s / 10 s", ("bid",), sql("q5"), _native_q5,
              "groupBy(auction, window(dateTime, '10 seconds', '2 seconds')).count()"),
        Query("q5f", "q5 as Flink writes it: the counts joined with each window's maximum, one stream", ("bid",),
              sql("q5_flink"), None, "no native form: Spark streams no join of two aggregations' results"),
        Query("q7", "highest bid per TUMBLE 10 s", ("bid",), sql("q7"), _native_q7,
              "groupBy(window(dateTime, '10 seconds')).agg(max(price), max_by(..., price))"),
        Query("q7f", "q7 as Flink writes it: the bids joined with their window's maximum, one stream", ("bid",),
              sql("q7_flink"), None, "no native form: Spark streams no join of a window's rows with its maximum"),
        Query("q8", "new users: persons with an auction in their TUMBLE 10 s window", ("person", "auction"),
              sql("q8"), _native_q8,
              "persons join auctions deduplicated per (seller, window) ON id = seller AND window = window"),
        Query("q11", "bids per bidder per SESSION (gap 10 s)", ("bid",), sql("q11"), _native_q11,
              "groupBy(bidder, session_window(dateTime, 10 s - 1 µs)).count()"),
    ]
    if per_key:  # the same queries with a clock per key: sqlwin's buckets then run in parallel
        queries.insert(1, Query("q5k", "q5 with PARTITION BY auction (a clock per auction)", ("bid",),
                                sql("q5").replace("TABLE bid WATERMARK", "TABLE bid PARTITION BY auction WATERMARK"),
                                _native_q5, "as q5 (Spark has one watermark per stream)", per_key=True))
        queries.append(Query("q11k", "q11 with PARTITION BY bidder (a clock per bidder)", ("bid",),
                             sql("q11").replace("TABLE bid WATERMARK", "TABLE bid PARTITION BY bidder WATERMARK"),
                             _native_q11, "as q11 (Spark has one watermark per stream)", per_key=True))
    return queries


# --------------------------------------------------------------------------- engines


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and all its descendants: the driver, the JVM it
    launched and the JVM's Python workers (reaped children included). The other engineer's
    processes are not in it, so it measures cores as Nexmark does, whatever else runs."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, times = {}, {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    root = os.getpid()
    total = 0
    for pid, ticks in times.items():
        node = pid
        while node and node != root:
            node = parents.get(node, 0)
        if node == root:
            total += ticks
    return total / tick


@dataclass
class Engine:
    """One streaming query fed one micro-batch at a time from its own source directory."""

    name: str
    source: Path
    streams: tuple[str, ...]
    query: object = None  # StreamingQuery
    handle: object = None  # sqlwin's StreamingWindowQuery
    seen: int = -1
    per_batch: list = field(default_factory=list)  # (wall s, cpu s, rows read, Spark micro-batches)
    phases: list = field(default_factory=list)  # each micro-batch's Spark durationMs, summed over its Spark batches

    def feed(self, index: int, entry: dict) -> None:
        started, cpu = time.perf_counter(), cpu_seconds()
        name = f"batch-{index:06d}"
        if len(self.streams) == 1:  # the file under a hidden name, then renamed: never seen half-written
            (path, _, _), = [entry[s] for s in self.streams]
            hidden = self.source / f".{name}.parquet"
            os.link(path, hidden)
            os.rename(hidden, self.source / f"{name}.parquet")
        else:  # every stream's file of the batch in one hidden directory, renamed at once
            hidden = self.source / f".{name}"
            hidden.mkdir()
            for stream in self.streams:
                os.link(entry[stream][0], hidden / f"{stream}.parquet")
            os.rename(hidden, self.source / name)
        if self.handle is not None:
            self.handle.process_all_available()
        else:
            self.query.processAllAvailable()
        wall, used = time.perf_counter() - started, cpu_seconds() - cpu
        fresh = [p for p in self.query.recentProgress if p["batchId"] > self.seen and "addBatch" in p["durationMs"]]
        if fresh:
            self.seen = fresh[-1]["batchId"]
        self.per_batch.append((wall, used, sum(p["numInputRows"] for p in fresh), len(fresh)))
        phases: dict = {}
        for progress in fresh:
            for phase, ms in progress["durationMs"].items():
                phases[phase] = phases.get(phase, 0) + ms
        self.phases.append(phases)

    def stop(self) -> None:
        try:
            if self.handle is not None:
                self.handle.stop()
            elif self.query is not None:
                self.query.stop()
        except Exception as err:  # already failed: its error was reported
            print(f"   ({self.name} stop: {type(err).__name__})")


def readers(spark, schemas: dict, engine: Engine) -> dict:
    engine.source.mkdir(parents=True)
    frames = {}
    for stream in engine.streams:
        path = engine.source if len(engine.streams) == 1 else engine.source / "*" / f"{stream}.parquet"
        frames[stream] = (spark.readStream.schema(schemas[stream]).option("maxFilesPerTrigger", 1)
                          .parquet(str(path)))
    return frames


def start_sqlwin(spark, sw, schemas, query: Query, root: Path) -> Engine:
    engine = Engine("sqlwin", root / "sqlwin-source", query.streams)
    frames = readers(spark, schemas, engine)
    engine.handle = sw.stream(query.sql, sources=frames, sink=str(root / "sqlwin-sink"),
                              checkpoint=str(root / "sqlwin-checkpoint"))
    engine.query = engine.handle.query
    return engine


def start_native(spark, F, schemas, query: Query, root: Path) -> Engine:
    engine = Engine("native", root / "native-source", query.streams)
    frames = readers(spark, schemas, engine)
    engine.query = (query.native(F, frames).writeStream.format("parquet").outputMode("append")
                    .option("path", str(root / "native-sink"))
                    .option("checkpointLocation", str(root / "native-checkpoint")).start())
    return engine


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return f"{type(err).__name__}: " + (" | ".join(lines[:3]) if lines else "(no message)")


# --------------------------------------------------------------------------- checks


def read_sink(spark, path: Path, columns: list[str]):
    """The sink's rows (sqlwin's without op / firing / emit_seq / batch_id); None when it is empty."""
    if not path.exists() or not any(path.rglob("*.parquet")):
        return None
    frame = spark.read.parquet(str(path))
    if "op" in frame.columns:
        ops = {r["op"] for r in frame.select("op").distinct().collect()}
        if ops - {"+I"}:
            raise AssertionError(f"sqlwin emitted {sorted(ops)}, expected only +I (EMIT FINAL)")
    return frame.select(*columns)


def compare(reference, result, name: str) -> tuple[bool, str]:
    """Multiset equality of two DataFrames with the same columns."""
    if result is None:
        return reference.isEmpty(), f"{name}: no rows"
    missing = reference.exceptAll(result).count()
    extra = result.exceptAll(reference).count()
    ok = missing == 0 and extra == 0
    return ok, f"{name} {'=' if ok else '!='} reference ({missing:,} missing, {extra:,} extra)"


def register_events(spark, files: dict) -> None:
    """The events as the views nx_bid, nx_person, nx_auction (files: {stream: [parquet paths]})."""
    for stream in STREAMS:
        spark.read.parquet(*[str(p) for p in files[stream]]).createOrReplaceTempView(f"nx_{stream}")


def reference_of(spark, base: str, closed: str):
    """(result columns, the reference DataFrame -- None for q7, checked by check_q7 --, the SQL
    of a result row's window end) of query `base` over the nx_ views, windows ending <= `closed`."""
    if base == "q5f":  # per window the auctions with the most bids (Flink's q5 in full)
        columns = ["auction", "num", "starttime", "endtime"]
        reference = spark.sql("""
            SELECT auction, num, starttime, endtime FROM (
              SELECT *, max(num) OVER (PARTITION BY starttime, endtime) AS maxn FROM (
                SELECT auction, window.start AS starttime, window.end AS endtime, count(*) AS num
                FROM nx_bid GROUP BY auction, window(dateTime, '10 seconds', '2 seconds')))
            WHERE num >= maxn""").where(f"endtime <= {closed}")
    elif base == "q7f":  # every bid at the top price of its window (Flink's q7 in full)
        columns = ["auction", "price", "bidder", "dateTime", "window_end"]
        reference = spark.sql("""
            SELECT auction, price, bidder, dateTime, window_end FROM (
              SELECT auction, price, bidder, dateTime, window.end AS window_end,
                     max(price) OVER (PARTITION BY window) AS maxprice
              FROM (SELECT *, window(dateTime, '10 seconds') AS window FROM nx_bid))
            WHERE price = maxprice""").where(f"window_end <= {closed}")
    elif base == "q5":
        columns = ["auction", "window_start", "window_end", "num"]
        reference = spark.sql("""
            SELECT auction, window.start AS window_start, window.end AS window_end, count(*) AS num
            FROM nx_bid GROUP BY auction, window(dateTime, '10 seconds', '2 seconds')""").where(
            f"window_end <= {closed}")
    elif base == "q7":
        columns = ["window_start", "window_end", "price", "auction", "bidder", "dateTime"]
        reference = None  # max_by picks one of the bids at the top price: checked below
    elif base == "q8":
        columns = ["id", "name", "window_start"]
        reference = spark.sql("""
            SELECT p.id, p.name, p.window_start FROM
              (SELECT id, name, window.start AS window_start FROM nx_person
               GROUP BY id, name, window(dateTime, '10 seconds')) p
            JOIN (SELECT seller, window.start AS window_start FROM nx_auction
                  GROUP BY seller, window(dateTime, '10 seconds')) a
            ON p.id = a.seller AND p.window_start = a.window_start""").where(
            f"window_start + INTERVAL 10 SECONDS <= {closed}")
    else:  # q11: sessions by gaps and islands (a bid >= 10 s after the bidder's previous one opens a session)
        columns = ["bidder", "bid_count", "starttime", "endtime"]
        reference = spark.sql("""
            SELECT bidder, count(*) AS bid_count, min(dateTime) AS starttime,
                   max(dateTime) + INTERVAL 10 SECONDS AS endtime
            FROM (SELECT bidder, dateTime, sum(new) OVER (PARTITION BY bidder ORDER BY dateTime
                                                          ROWS UNBOUNDED PRECEDING) AS session
                  FROM (SELECT bidder, dateTime,
                               CASE WHEN lag(dateTime) OVER (PARTITION BY bidder ORDER BY dateTime)
                                         > dateTime - INTERVAL 10 SECONDS THEN 0 ELSE 1 END AS new
                        FROM nx_bid))
            GROUP BY bidder, session""").where(f"endtime <= {closed}")
    bound = {"q5": "window_end", "q5f": "endtime", "q7": "window_end", "q7f": "window_end", "q8": "window_start + INTERVAL 10 SECONDS", "q11": "endtime"}[base]
    return columns, reference, bound


def check(spark, query: Query, root: Path, files: dict, cutoff_us: int) -> dict:
    """sqlwin's and native's results against a plain Spark SQL batch computation over all the
    events fed, on the windows that end at least 1 s before the watermark every engine reached
    (`cutoff_us`: the newest event time of the query's inputs less the 5 s delay)."""
    from pyspark.sql import functions as F

    register_events(spark, files)
    closed = f"timestamp_micros({cutoff_us - 1_000_000})"
    base = query.name.rstrip("k")
    columns, reference, bound = reference_of(spark, base, closed)
    outcome = {}
    for engine in ("sqlwin", "native"):
        try:
            result = read_sink(spark, root / f"{engine}-sink", columns)
        except AssertionError as err:
            outcome[engine] = (False, f"{engine}: {err}")
            continue
        if result is not None:
            result = result.where(f"{bound} <= {closed}")
        if base == "q7":
            outcome[engine] = check_q7(spark, result, engine, closed)
        else:
            outcome[engine] = compare(reference, result, engine)
    if reference is not None:
        outcome["rows"] = reference.count()
    if base == "q5":  # the rest of Flink's q5 over sqlwin's counts: per window the auctions with the most bids
        sink = read_sink(spark, root / "sqlwin-sink", columns)
        if sink is not None:
            from pyspark.sql import Window

            w = Window.partitionBy("window_start", "window_end")
            hot = (sink.where(f"window_end <= {closed}").withColumn("maxn", F.max("num").over(w))
                   .where("num >= maxn"))
            outcome["hot"] = (hot.count(), hot.select("window_start").distinct().count())
    return outcome


def check_q7(spark, result, engine: str, closed: str) -> tuple[bool, str]:
    """Per window the top price, and the bid max_by names is a bid of that window at that price."""
    top = spark.sql("""
        SELECT window.start AS window_start, window.end AS window_end, max(price) AS price,
               max_by(count, price) AS ties FROM (
          SELECT window, price, count(*) AS count FROM nx_bid GROUP BY window(dateTime, '10 seconds'), price)
        GROUP BY window""").where(f"window_end <= {closed}")
    if result is None:
        return top.isEmpty(), f"{engine}: no rows"
    ok, text = compare(top.select("window_start", "window_end", "price"),
                       result.select("window_start", "window_end", "price"), engine)
    bids = spark.sql("SELECT window(dateTime, '10 seconds').start AS window_start, price, auction, bidder, dateTime "
                     "FROM nx_bid")
    stray = result.join(bids, ["window_start", "price", "auction", "bidder", "dateTime"], "left_anti").count()
    ties = top.where("ties > 1").count()
    return ok and stray == 0, (f"{text}; {stray} named bids not at the top of their window; "
                               f"{ties} windows with tied tops")


# --------------------------------------------------------------------------- Flink 2.3

FLINK_SCRIPT = Path(__file__).with_name("flink_nexmark.py")
FLINK_TYPES = {  # the columns of flink_nexmark.py's CSV sinks (read as text, cast here)
    "q5": {"auction": "bigint", "window_start": "timestamp", "window_end": "timestamp", "num": "bigint"},
    "q7": {"window_start": "timestamp", "window_end": "timestamp", "price": "bigint", "auction": "bigint",
           "bidder": "bigint", "dateTime": "timestamp"},
    "q8": {"id": "bigint", "name": "string", "window_start": "timestamp"},
    "q11": {"bidder": "bigint", "bid_count": "bigint", "starttime": "timestamp", "endtime": "timestamp"},
}


def run_flink(python: str, tmp: Path, names: list[str], args) -> dict | None:
    """flink_nexmark.py under the Flink venv's `python` over the same generated events (its own
    CSV copy of them), the same warm-up split; its figures ({"events", "queries": {name: ...}})."""
    import json
    import subprocess

    out = tmp / "flink.json"
    command = [python, str(FLINK_SCRIPT), str(tmp / "events"), str(tmp / "flink"),
               "--warmup-batches", str(args.warmup_batches), "--parallelism", "2", "--json", str(out)]
    for name in names:
        command += ["--only", name]
    print(f"== Flink 2.3: {' '.join(command)} (load average {os.getloadavg()[0]:.2f})", flush=True)
    finished = subprocess.run(command)
    if finished.returncode != 0 or not out.exists():
        print(f"   flink_nexmark.py exited with {finished.returncode}")
        return None
    return json.loads(out.read_text())


def check_flink(spark, base: str, sink: Path, written: list[dict], streams, warm: int) -> tuple[str, str]:
    """Flink's rows against the same Spark reference as sqlwin's, on the windows whose events
    are all in Flink's timed job (it starts after the warm-up batches with no state: windows
    starting after the newest warm-up event; sessions 10 s after it) that sqlwin closed too
    (ending >= 1 s before the final watermark of the Spark runs). Flink itself closes every
    window at the end of its input. Returns ("yes" / "NO", details)."""
    from pyspark.sql import functions as F

    register_events(spark, {s: [e[s][0] for e in written] for s in STREAMS})
    newest = min(max(e[s][2] for e in written) for s in streams)
    closed = f"timestamp_micros({newest - 5_000_000 - 1_000_000})"
    first_us = max(e[s][2] for e in written[:warm] for s in streams) + 1000 if warm else None
    start_col = "starttime" if base == "q11" else "window_start"
    after = "TRUE" if first_us is None else \
        f"{start_col} >= timestamp_micros({first_us + (GAP_US if base == 'q11' else 0)})"
    columns, ref, bound = reference_of(spark, base, closed)
    types = FLINK_TYPES[base]
    raw = spark.read.schema(", ".join(f"`{c}` string" for c in types)).csv(str(sink))
    every = raw.select(*[F.col(c).cast(t).alias(c) for c, t in types.items()])
    result = every.where(f"{bound} <= {closed} AND {after}")
    total = every.count()
    if base == "q7":  # every bid at its window's top price (nexmark's join back)
        top = spark.sql("""
            SELECT window.start AS window_start, window.end AS window_end, max(price) AS price,
                   max_by(count, price) AS ties FROM (
              SELECT window, price, count(*) AS count FROM nx_bid GROUP BY window(dateTime, '10 seconds'), price)
            GROUP BY window""").where(f"window_end <= {closed} AND {after}")
        _, text = compare(top.select("window_start", "window_end", "price"),
                          result.select("window_start", "window_end", "price").distinct(), "flink")
        bids = spark.sql("SELECT window(dateTime, '10 seconds').start AS window_start, price, auction, bidder, "
                         "dateTime FROM nx_bid")
        stray = result.join(bids, ["window_start", "price", "auction", "bidder", "dateTime"], "left_anti").count()
        expected = top.agg(F.sum("ties")).first()[0] or 0
        rows = result.count()
        ok = text.startswith("flink =") and stray == 0 and rows == expected
        return ("yes" if ok else "NO") if expected else "-", (f"{text}; {rows:,} rows, {expected:,} bids at the top prices; "
                                         f"{stray} not at the top of their window; {total:,} rows in all")
    ok, text = compare(ref.where(after), result, "flink")
    windows = result.select(start_col).distinct().count() if base != "q11" else result.count()
    unit = "windows" if base != "q11" else "sessions"
    verdict = ("yes" if ok else "NO") if windows else "-"  # "-": no window both ran whole (a short run)
    return verdict, f"{text} on {windows:,} {unit}; {total:,} rows in all (every window closed)"


# --------------------------------------------------------------------------- running


def run_query(spark, sw, F, query: Query, schemas: dict, written: list[dict], root: Path, args) -> dict:
    print(f"== {query.name}: {query.title} (load average {os.getloadavg()[0]:.2f})")
    print("   " + "\n   ".join(line for line in query.sql.splitlines() if line.strip() and not line.startswith("--")))
    root.mkdir(parents=True)
    result = {"name": query.name, "flink": query.flink}
    try:
        ours = start_sqlwin(spark, sw, schemas, query, root)
    except Exception as err:
        print(f"   sqlwin did not start the stream: {first_line(err)}")
        result["error"] = first_line(err)
        return result
    theirs = None
    if query.native is not None and args.native:
        try:
            theirs = start_native(spark, F, schemas, query, root)
        except Exception as err:
            print(f"   Spark did not start the native stream: {first_line(err)}")
            result["native_error"] = first_line(err)
    for index, entry in enumerate(written):
        engines = (ours, theirs) if theirs else (ours,)
        for engine in (engines if index % 2 == 0 else tuple(reversed(engines))):
            try:
                engine.feed(index, entry)
            except Exception as err:  # reported as it is, the run goes on with the next query
                print(f"   {engine.name} failed at micro-batch {index}: {first_line(err)}")
                engine.stop()
                if engine is ours:
                    result["error"] = f"micro-batch {index}: {first_line(err)}"
                    if theirs:
                        theirs.stop()
                    return result
                result["native_error"] = first_line(err)
                theirs = None
    warm = args.warmup_batches
    measured = written[warm:]
    events = sum(e["last"] - e["first"] for e in measured)
    expected_rows = sum(e[s][1] for e in measured for s in query.streams)
    for engine in (ours, theirs):
        if engine is None:
            continue
        batches = engine.per_batch[warm:]
        wall = sum(b[0] for b in batches)
        cpu = sum(b[1] for b in batches)
        rows = sum(b[2] for b in batches)
        result[engine.name] = {"seconds": wall, "events_per_s": events / wall, "cpu": cpu,
                               "events_per_cpu_s": events / cpu if cpu else float("nan"),
                               "median_ms": statistics.median(b[0] for b in batches) * 1000,
                               "spark_batches": statistics.mean(b[3] for b in batches)}
        note = "" if rows == expected_rows else f" (read {rows:,} rows, expected {expected_rows:,})"
        print(f"   {engine.name:>6}: {events:,} events ({expected_rows:,} {'+'.join(query.streams)} rows) in "
              f"{wall:.1f} s = {events / wall:,.0f} events/s, {events / wall / 2:,.0f} per core (2 cores); "
              f"CPU {cpu:.1f} s = {events / cpu:,.0f} events per CPU-second; per micro-batch median "
              f"{result[engine.name]['median_ms']:,.0f} ms, {result[engine.name]['spark_batches']:.1f} Spark "
              f"batches{note}")
        phases = engine.phases[warm:]
        names = sorted({n for p in phases for n in p if n != "triggerExecution"})
        print(f"   {'':>6}  Spark durationMs, median per micro-batch: " + ", ".join(
            f"{n} {statistics.median(p.get(n, 0) for p in phases):,.0f}" for n in ["triggerExecution", *names]))
    if theirs is not None:
        result["ratio"] = result["sqlwin"]["events_per_s"] / result["native"]["events_per_s"]
    try:
        if query.per_key:  # a quiet key's windows close at the end of input (not timed)
            ours.handle.end_input()
        newest = min(max(e[s][2] for e in written) for s in query.streams)
        cutoff = newest - 5_000_000
        outcome = check(spark, query, root, {s: [e[s][0] for e in written] for s in ("person", "auction", "bid")},
                        cutoff)
        agree = [outcome[e][0] for e in ("sqlwin", "native") if e in outcome and (e == "sqlwin" or theirs)]
        result["agree"] = "yes" if all(agree) else "NO"
        details = "; ".join(outcome[e][1] for e in ("sqlwin", "native") if e in outcome and (e == "sqlwin" or theirs))
        rows = f"{outcome['rows']:,} reference rows, " if "rows" in outcome else ""
        print(f"   results ({rows}windows closed 1 s before the final watermark): {details}")
        if "hot" in outcome:
            print(f"   q5's last step over sqlwin's counts (per window the auctions with the most bids): "
                  f"{outcome['hot'][0]:,} rows in {outcome['hot'][1]:,} windows")
    except Exception as err:
        print(f"   check failed: {first_line(err)}")
        result["agree"] = "error"
    finally:
        ours.stop()
        if theirs:
            theirs.stop()
    return result


def print_table(results: list[dict], events: int, flink: dict | None) -> None:
    print()
    print(f"{'query':<6} {'sqlwin s':>8} {'sqlwin ev/s':>12} {'per core':>9} {'Flink/core':>10} {'vs Flink':>8} "
          f"{'ev/CPU-s':>9} {'native ev/s':>12} {'vs native':>9}  agrees  {'Flink2.3 ev/s':>13} "
          f"{'vs Flink2.3':>11}  Flink agrees")
    for r in results:
        if "sqlwin" not in r:
            print(f"{r['name']:<6} sqlwin error: {r.get('error', '?')}")
            continue
        o = r["sqlwin"]
        per_core = o["events_per_s"] / 2
        native = r.get("native")
        ours = (flink or {}).get("queries", {}).get(r["name"].rstrip("kf"), {})
        theirs = ours.get("events_per_s")
        print(f"{r['name']:<6} {o['seconds']:>8.1f} {o['events_per_s']:>12,.0f} {per_core:>9,.0f} {r['flink']:>10,.0f} "
              f"{per_core / r['flink']:>8.2f} {o['events_per_cpu_s']:>9,.0f} "
              f"{(format(native['events_per_s'], ',.0f') if native else '-'):>12} "
              f"{(format(r['ratio'], '.2f') if native else '-'):>9}  {r.get('agree', '-'):<6} "
              f"{(format(theirs, ',.0f') if theirs else '-'):>13} "
              f"{(format(o['events_per_s'] / theirs, '.2f') if theirs else '-'):>11}  "
              f"{r.get('flink_agree', ours.get('error', '-'))}")
    print(f"events = all Nexmark events (person + auction + bid) of the measured micro-batches ({events:,}); "
          "per core = events/s / 2 (local[2]); Flink/core = Flink 1.13's published throughput per core; "
          "vs Flink = per core / Flink/core; ev/CPU-s = events per CPU-second this process tree used "
          "(driver, JVM, Python workers), Nexmark's own measure of cores; vs native = sqlwin events/s / "
          "native Spark events/s on the same files in the same run")
    if flink is None:
        print("Flink 2.3 not run (--flink PYTHON or SQLWIN_FLINK_PYTHON: the Python of a venv with "
              "apache-flink==2.3.0, see benchmarks/flink_setup.sh)")
    else:
        print(f"Flink2.3 ev/s = the same events ({flink['events']:,}) / the wall time of one Flink 2.3 streaming "
              f"job over the measured batches (parallelism {flink['parallelism']}, {flink['state_backend']} state, "
              "from submission to the job's end, after an untimed job over the warm-up batches); vs Flink2.3 = "
              "sqlwin events/s / Flink2.3 ev/s (q5k / q11k against Flink's q5 / q11)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_400_000, help="events of all three streams")
    parser.add_argument("--batches", type=int, default=24, help="micro-batches the events are split into")
    parser.add_argument("--warmup-batches", type=int, default=2,
                        help="first micro-batches of each query left out of the figures")
    parser.add_argument("--rate", type=float, default=10_000.0, help="events per second of event time")
    parser.add_argument("--out-of-order", type=int, default=1, metavar="N",
                        help="scramble the events within each group of N (Nexmark's outOfOrderGroupSize)")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--only", action="append", default=[], metavar="QUERY", help="q5, q7, q8, q11 (repeatable)")
    parser.add_argument("--per-key", action="store_true",
                        help="also run q5 and q11 with PARTITION BY (a clock per key: sqlwin's buckets in parallel)")
    parser.add_argument("--no-native", dest="native", action="store_false", help="sqlwin only")
    parser.add_argument("--keep", action="store_true", help="keep the working directory and print where it is")
    parser.add_argument("--flink", metavar="PYTHON", default=os.environ.get("SQLWIN_FLINK_PYTHON"),
                        help="the Python of a venv with apache-flink==2.3.0 (benchmarks/flink_setup.sh): after "
                             "the Spark runs, run benchmarks/flink_nexmark.py with it over the same events "
                             "(default: $SQLWIN_FLINK_PYTHON; unset: Flink 2.3 is not run)")
    args = parser.parse_args()
    if args.batches <= args.warmup_batches:
        parser.error("--batches must be more than --warmup-batches")

    import sqlwin
    from sqlwin.session import session

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    tmp = Path(tempfile.mkdtemp(prefix="sqlwin-nexmark-"))
    spark = None
    try:
        config = NexmarkConfig(events=args.events, rate=args.rate, out_of_order_group=args.out_of_order)
        started = time.perf_counter()
        written = generate(config, tmp / "events", args.batches)
        counts = {s: sum(e[s][1] for e in written) for s in STREAMS}
        print(f"generated {args.events:,} events in {time.perf_counter() - started:.1f} s: "
              + ", ".join(f"{counts[s]:,} {s}s" for s in STREAMS)
              + f"; {args.batches} micro-batches of ~{args.events // args.batches:,} events "
              f"({args.events / args.batches / args.rate:,.1f} s of event time each at {args.rate:,.0f} events/s)")
        spark = session(app_name="sqlwin-nexmark", shuffle_partitions=args.shuffle_partitions)
        from pyspark.sql import functions as F

        sw = sqlwin.attach(spark)
        schemas = {s: spark.read.parquet(str(written[0][s][0])).schema for s in STREAMS}
        print(f"pyspark {spark.version}, {spark.sparkContext.master}, {args.shuffle_partitions} shuffle partitions, "
              f"RocksDB state; watermark delay 5 s; the first {args.warmup_batches} micro-batches of each query "
              "are a warm-up, left out of the figures; sqlwin and native fed the same files, interleaved")
        print()
        results, ran = [], {}
        for query in load_queries(args.per_key):
            if args.only and query.name not in args.only:
                continue
            results.append(run_query(spark, sw, F, query, schemas, written, tmp / query.name, args))
            ran.setdefault(query.name.rstrip("kf"), query.streams)
            print()
        flink = None
        if args.flink:
            flink = run_flink(args.flink, tmp, list(ran), args)
            for name, streams in ran.items():
                figures = (flink or {}).get("queries", {}).get(name, {})
                if "events_per_s" not in figures:
                    continue
                try:
                    agree, details = check_flink(spark, name, tmp / "flink" / "sink" / name, written, streams,
                                                 args.warmup_batches)
                except Exception as err:
                    agree, details = "error", first_line(err)
                print(f"   flink {name} results: {details}")
                for r in results:
                    if r["name"].rstrip("kf") == name:
                        r["flink_agree"] = agree
        measured = sum(e["last"] - e["first"] for e in written[args.warmup_batches:])
        print_table(results, measured, flink)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if spark is not None:
            spark.stop()
        if args.keep:
            print(f"working directory kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
