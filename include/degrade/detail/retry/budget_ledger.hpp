// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The retry budget's books: requests deposited, retries withdrawn, over a
// window that slides a tenth of its length at a time, built so that the
// deposit every request makes costs about what a plain counter costs.
//
// Why not a tick window (detail/tick_window.hpp) as the throttler has: a
// tick window stamps each event with its tick, so each deposit reads the
// clock and makes an atomic read-modify-write on a line every caller
// shares (about 8 ns together). That is more than the closed breaker the
// deposit sits beside. Here a deposit is a plain add to a counter only the
// calling thread writes (detail/thread_shard.hpp), and time enters through
// marks instead:
//
//   * Deposits are cumulative per-thread totals; their sum is the number
//     of requests ever made, read whole whenever it is needed.
//   * A mark records, at the first moment someone notices a new tick, the
//     deposit total and the retry total. The window at tick t counts what
//     happened since the oldest mark of ticks t-9..t, so the window is the
//     current tick and the nine before it, as in a tick window.
//   * Who notices: every withdrawal and every read reads the clock; a
//     depositing thread reads it on each of its first 64 deposits of a
//     tick and on every 64th after that. A thread making fewer than 64
//     requests a tick therefore normally marks (and so dates) each of them
//     exactly. A busier thread reads the clock late by at most 63 of its
//     own requests, but however long those take: a thread that goes quiet
//     on its stride dates its next 63 requests by whatever mark came last,
//     up to a window before them. (A thread that takes over a departed
//     thread's shard starts on that thread's stride, and a mark being
//     taken by another thread is not waited for.) All of these only date
//     requests earlier than they were made: they leave early, never late.
//   * A mark is dated by a clock read taken under the mark's lock, not by
//     the read that noticed the tick, so a caller that noticed and then
//     stalled cannot label the present with a tick long gone.
//   * A deposit counts at once. It leaves the window when the tick of the
//     first mark after it leaves: ten ticks after its own when that tick
//     was marked before it, earlier when nobody marked in between (a
//     request may leave early, never late, so the budget errs on the side
//     of fewer retries).
//
// Withdrawals are exact: the grant word holds the retries used in the
// window and the retries the window allows, with a generation, and every
// grant is one compare-and-swap of used to used + 1 while used < allowed;
// a mark swaps in the new window's figures by compare-and-swap too, from
// the exact used it replaces. `allowed` is computed from the deposits at
// the mark; when it runs out, the withdrawal sums the live deposits and
// raises it before refusing, so requests made since the mark count at
// once.
//
// A withdrawal reads the grant word, then the clock. If the clock shows a
// tick nobody has marked, it takes the mark itself, and when another
// thread holds the mark's lock it refuses rather than grant from the
// window that has just ended: a retry granted there would be dated before
// the mark and leave the window a tick early, and a marker stalled by the
// scheduler would let that run on for as long as it stalls (a window
// granting twice its allowance). A withdrawal whose word changed
// generation under it (a mark came between) starts again from the word.
// So every grant comes from the window of the tick its own clock read
// showed, and no ten ticks' retries exceed their allowance.
//
// Marks are taken under a mutex nobody blocks on: deposits, withdrawals
// and Read() only try-lock it (Read() takes a due mark too), and
// granted() does not need it, so nothing ever waits. The cost of never
// waiting is that every withdrawal made while another thread is taking a
// mark is refused: normally the mark takes well under a microsecond once a
// tick, but a marking thread the scheduler deschedules holds it longer. A clock
// set back (a FakeClock) takes no mark until it passes the newest one:
// the window stands still meanwhile and nothing granted is forgotten.
// Ticks are counted from the start of the clock's range (in phase with
// the ledger's construction), not as a saturating distance from it, so a
// ledger built at the end of time (a FakeClock at InfinitePast) still
// slides once the clock comes back.
//
// Thread safety: every member may be called from any thread at once.
// Deposit() and TryWithdraw() never block, and allocate nothing after a
// thread's first call (which registers the thread's shard; see
// detail/thread_shard.hpp).

#ifndef DEGRADE_DETAIL_RETRY_BUDGET_LEDGER_HPP_
#define DEGRADE_DETAIL_RETRY_BUDGET_LEDGER_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class BudgetLedger {
 public:
  static constexpr uint64_t kTicks = 10;
  // A field of the grant word saturates here: 268,435,455 retries in one
  // window, over four times the largest floor a budget accepts
  // (10^6/s x 60 s). A window allowing more grants this many.
  static constexpr uint64_t kMaxField = (uint64_t{1} << 28) - 1;
  // Deposits a thread makes with a clock read each, per tick, before it
  // reads the clock only on every kStride-th.
  static constexpr uint64_t kExactPerTick = 64;
  static constexpr uint64_t kStride = 64;

  struct Window {
    uint64_t requests = 0;
    uint64_t retries = 0;
    double balance = 0;  // retries that would be granted now, fractional
  };

  // REQUIRES: percent in [0, 1], reserve in [0, kMaxField], window > 0;
  // `clock` outlives the ledger.
  BudgetLedger(double percent, double reserve, absl::Duration window,
               const Clock* clock)
      : percent_(percent),
        reserve_(reserve),
        clock_(clock),
        real_clock_(clock == &RealClock::Instance() ? &RealClock::Instance()
                                                    : nullptr),
        width_(static_cast<uint64_t>(std::max<int64_t>(
            absl::ToInt64Nanoseconds(window) / static_cast<int64_t>(kTicks),
            1))),
        shard_count_(ShardArraySize()),
        shards_(new Shard[shard_count_]) {
    const int64_t now = NowNanos();
    phase_ = FromMin(now) % width_;
    // The first mark: nothing deposited, nothing withdrawn.
    const uint64_t t = TickOf(now);
    marks_[t % kTicks] = Mark{t, 0, 0, true};
    word_.store(Pack(0, 0, Allowance(0)), std::memory_order_relaxed);
    retries_at_[0].store(0, std::memory_order_relaxed);
    current_tick_.store(t, std::memory_order_relaxed);
    next_tick_at_.store(StartOf(t + 1), std::memory_order_relaxed);
  }

  BudgetLedger(const BudgetLedger&) = delete;
  BudgetLedger& operator=(const BudgetLedger&) = delete;

  DEGRADE_ALWAYS_INLINE void Deposit() {
    Shard& s = shards_[ThreadShardIndex()];
    if (DEGRADE_LIKELY(ThreadOwnsShard())) {
      const uint64_t c = s.deposits.load(std::memory_order_relaxed);
      // Before the add: a mark this read takes excludes this request, which
      // then belongs to the new tick.
      if (DEGRADE_UNLIKELY(c >= s.next_check.load(std::memory_order_relaxed))) {
        CheckClock(s, c);
      }
      s.deposits.store(c + 1, std::memory_order_relaxed);
    } else {
      NoteTime(NowNanos());
      s.deposits.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // True, counting one retry, when the window has room for it.
  bool TryWithdraw() {
    for (;;) {
      // The word first, then the clock: the mark whose word this reads was
      // dated before the clock read below, so a grant made from it is dated
      // by the tick this withdrawal's clock read saw.
      uint64_t w = word_.load(std::memory_order_acquire);
      const uint64_t gen = Gen(w);
      const int64_t now = NowNanos();
      if (DEGRADE_UNLIKELY(now >=
                           next_tick_at_.load(std::memory_order_acquire))) {
        if (!MarkTick(TickOf(now))) {
          shards_[ThreadShardIndex()].refused.Add(1);
          return false;
        }
        // Marked: when that changed the word, read it, then the clock, again.
        if (Gen(word_.load(std::memory_order_acquire)) != gen) continue;
      }
      for (;;) {
        if (DEGRADE_LIKELY(Used(w) < Allowed(w))) {
          if (word_.compare_exchange_weak(w, w + kOneUsed,
                                          std::memory_order_acquire,
                                          std::memory_order_acquire)) {
            return true;
          }
        } else if (!Raise(w)) {
          shards_[ThreadShardIndex()].refused.Add(1);
          return false;
        }
        if (Gen(w) != gen) break;  // a mark came between: start again
      }
    }
  }

  // The window now (taking a mark if a tick has begun).
  Window Read() {
    NoteTime(NowNanos());
    uint64_t w = word_.load(std::memory_order_acquire);
    Window out;
    for (int tries = 0;; ++tries) {
      const uint64_t since =
          Since(base_[Gen(w) % kBases].load(std::memory_order_relaxed),
                SumDeposits());
      const uint64_t again = word_.load(std::memory_order_acquire);
      if (again != w && tries < 3) {
        w = again;
        continue;
      }
      out.requests = since;
      out.retries = Used(w);
      out.balance = std::max(0.0, percent_ * static_cast<double>(since) +
                                      reserve_ - static_cast<double>(Used(w)));
      return out;
    }
  }

  // Every retry granted. Lock-free: it reads the word and the total its
  // generation counts from, and retries if a mark came between.
  uint64_t granted() const {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t at =
          retries_at_[Gen(w) % kBases].load(std::memory_order_relaxed);
      if ((at >> kRetriesGenShift) == Gen(w)) {
        return (at & kRetriesMask) + Used(w);
      }
      // The slot already holds a later generation's total (this reader
      // stalled across marks): the word has moved on too.
      w = word_.load(std::memory_order_acquire);
    }
  }
  // Counts a refusal made by a caller that read the window (Read()) and
  // found no room.
  void CountRefused() { shards_[ThreadShardIndex()].refused.Add(1); }
  uint64_t refused() const {
    uint64_t n = 0;
    for (std::size_t i = 0; i < shard_count_; ++i) {
      n += shards_[i].refused.Load();
    }
    return n;
  }

 private:
  static constexpr uint64_t kBases = 4;
  // The grant word: generation (8 bits) | used (28) | allowed (28). The
  // generation tells a raise that a mark came between its read and its
  // swap; only a raise stalled for 256 marks (256 ticks) between the two
  // could miss one.
  static constexpr int kAllowedShift = 0;
  static constexpr int kUsedShift = 28;
  static constexpr int kGenShift = 56;
  static constexpr uint64_t kOneUsed = uint64_t{1} << kUsedShift;
  static constexpr uint64_t kGenMask = (uint64_t{1} << 8) - 1;
  // retries_at_ slots: generation (8 bits) | retries (56 bits; 7 x 10^16
  // retries, years at any rate an RPC client reaches).
  static constexpr int kRetriesGenShift = 56;
  static constexpr uint64_t kRetriesMask = (uint64_t{1} << 56) - 1;
  static constexpr uint64_t kSignBit = uint64_t{1} << 63;

  struct alignas(kCacheLine) Shard {
    // The thread's requests, ever.
    std::atomic<uint64_t> deposits{0};
    // The owner's clock reads (only the shard's owner touches these): the
    // deposit count at which it reads the clock next, the tick its last
    // read was in and how many reads it has made in that tick.
    std::atomic<uint64_t> next_check{0};
    std::atomic<uint64_t> seen_tick{0};
    std::atomic<uint64_t> reads_in_tick{0};
    ShardCounter refused;
  };

  // What was true at the first moment a tick was noticed.
  struct Mark {
    uint64_t tick = 0;
    uint64_t deposits = 0;
    uint64_t retries = 0;  // every retry ever granted
    bool valid = false;
  };

  static uint64_t Allowed(uint64_t w) {
    return (w >> kAllowedShift) & kMaxField;
  }
  static uint64_t Used(uint64_t w) { return (w >> kUsedShift) & kMaxField; }
  static uint64_t Gen(uint64_t w) { return (w >> kGenShift) & kGenMask; }
  static uint64_t Pack(uint64_t gen, uint64_t used, uint64_t allowed) {
    return ((gen & kGenMask) << kGenShift) |
           (std::min(used, kMaxField) << kUsedShift) |
           (std::min(allowed, kMaxField) << kAllowedShift);
  }
  static uint64_t Since(uint64_t base, uint64_t now) {
    return now > base ? now - base : 0;  // raw-time-ok: guarded, unsigned
  }

  // Retries the window allows for `requests` deposits.
  uint64_t Allowance(uint64_t requests) const {
    const double a =
        std::floor(percent_ * static_cast<double>(requests) + reserve_);
    return a >= static_cast<double>(kMaxField) ? kMaxField
                                               : static_cast<uint64_t>(a);
  }

  DEGRADE_ALWAYS_INLINE int64_t NowNanos() const {
    return real_clock_ != nullptr ? real_clock_->CoarseUnixNanos()
                                  : absl::ToUnixNanos(clock_->CoarseNow());
  }
  // Ticks count from the clock's earliest nanosecond (INT64_MIN), so every
  // instant has one and none saturates, shifted by phase_ so that they
  // begin where the ledger did (a simulation's ticks then fall where its
  // seconds do). The instants before the first whole tick are tick 0.
  static uint64_t FromMin(int64_t now) {
    return static_cast<uint64_t>(now) ^ kSignBit;
  }
  uint64_t TickOf(int64_t now) const {
    const uint64_t from_min = FromMin(now);
    return from_min < phase_ ? 0 : (from_min - phase_) / width_;
  }
  int64_t StartOf(uint64_t tick) const {
    if (tick > (~uint64_t{0} - phase_) / width_) return kSatMaxNanos;
    const uint64_t from_min = tick * width_ + phase_;
    // Back to signed: from_min - 2^63, without a signed overflow.
    return from_min >= kSignBit
               ? static_cast<int64_t>(from_min - kSignBit)
               : -static_cast<int64_t>(kSignBit - from_min - 1) - 1;
  }

  // Takes the mark of `now`'s tick if that tick is new and nobody else is
  // taking it.
  DEGRADE_ALWAYS_INLINE void NoteTime(int64_t now) {
    if (DEGRADE_UNLIKELY(now >=
                         next_tick_at_.load(std::memory_order_relaxed))) {
      MarkTick(TickOf(now));
    }
  }

  DEGRADE_NOINLINE void CheckClock(Shard& s, uint64_t c) {
    const int64_t now = NowNanos();
    NoteTime(now);
    const uint64_t tick = TickOf(now);
    uint64_t reads = s.reads_in_tick.load(std::memory_order_relaxed) + 1;
    if (tick != s.seen_tick.load(std::memory_order_relaxed)) {
      s.seen_tick.store(tick, std::memory_order_relaxed);
      reads = 1;
    }
    s.reads_in_tick.store(reads, std::memory_order_relaxed);
    s.next_check.store(c + (reads < kExactPerTick ? 1 : kStride),
                       std::memory_order_relaxed);
  }

  // True when tick `t` is marked on return: it was, this call marked it,
  // or another thread did meanwhile. False when another thread is still
  // marking. The acquire pairs with TakeMark's release of current_tick_,
  // so a caller told true then reads the new window's word.
  DEGRADE_NOINLINE bool MarkTick(uint64_t t) {
    if (t <= current_tick_.load(std::memory_order_acquire)) return true;
    if (mu_.TryLock()) {
      TakeMark(t);
      mu_.Unlock();
    }
    return t <= current_tick_.load(std::memory_order_acquire);
  }

  void TakeMark(uint64_t noticed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Dated now, under the lock: the caller may have noticed its tick long
    // ago (preempted since), and a clock set back keeps the later tick.
    const uint64_t t = std::max(noticed, TickOf(NowNanos()));
    if (t <= current_tick_.load(std::memory_order_relaxed)) return;
    const uint64_t deposits = SumDeposits();
    Mark& mark = marks_[t % kTicks];
    mark = Mark{t, deposits, 0, true};
    // The window's oldest mark: of ticks t-9..t, the earliest there is.
    const Mark* base = &mark;
    for (const Mark& m : marks_) {
      if (m.valid && m.tick <= t && t - m.tick < kTicks &&
          m.tick < base->tick) {
        base = &m;
      }
    }
    const uint64_t gen = (gen_ + 1) & kGenMask;
    // Published before the word names `gen`: a raiser that reads `gen` in
    // the word finds this base (or a later one, and then fails its swap).
    base_[gen % kBases].store(base->deposits, std::memory_order_relaxed);
    const uint64_t allowed = Allowance(Since(base->deposits, deposits));
    uint64_t w = word_.load(std::memory_order_relaxed);
    uint64_t retries = 0;
    for (;;) {
      // Exact: `retries` is the count the swap below replaces.
      retries = retries_base_ + Used(w);
      const uint64_t base_retries = base == &mark ? retries : base->retries;
      // Stored before the swap that names `gen`, which releases it.
      retries_at_[gen % kBases].store(
          (gen << kRetriesGenShift) | (base_retries & kRetriesMask),
          std::memory_order_relaxed);
      if (word_.compare_exchange_weak(
              w, Pack(gen, retries - base_retries, allowed),
              std::memory_order_release, std::memory_order_relaxed)) {
        retries_base_ = base_retries;
        break;
      }
    }
    mark.retries = retries;
    gen_ = gen;
    next_tick_at_.store(StartOf(t + 1), std::memory_order_release);
    current_tick_.store(t, std::memory_order_release);
  }

  // The window ran out at the allowance of its mark: recount the deposits
  // and raise it. False when that leaves no room (then `w` is unchanged);
  // true when the word now has room or has changed (`w` reloaded).
  DEGRADE_NOINLINE bool Raise(uint64_t& w) {
    for (;;) {
      const uint64_t base =
          base_[Gen(w) % kBases].load(std::memory_order_relaxed);
      const uint64_t allowed = Allowance(Since(base, SumDeposits()));
      if (allowed <= Allowed(w)) return false;
      const uint64_t raised =
          (w & ~(kMaxField << kAllowedShift)) | (allowed << kAllowedShift);
      if (word_.compare_exchange_strong(w, raised, std::memory_order_acquire,
                                        std::memory_order_acquire)) {
        w = raised;
        return true;
      }
      if (Used(w) < Allowed(w)) return true;
    }
  }

  uint64_t SumDeposits() const {
    uint64_t n = 0;
    for (std::size_t i = 0; i < shard_count_; ++i) {
      n += shards_[i].deposits.load(std::memory_order_relaxed);
    }
    return n;
  }

  const double percent_;
  const double reserve_;
  const Clock* const clock_;
  const RealClock* const real_clock_;  // clock_ when it is the default
  const uint64_t width_;               // of a tick, >= 1 ns
  uint64_t phase_ = 0;                 // set once, in the constructor
  const std::size_t shard_count_;
  const std::unique_ptr<Shard[]> shards_;

  // Read by every withdrawal.
  alignas(kCacheLine) std::atomic<uint64_t> word_{0};
  std::atomic<int64_t> next_tick_at_{0};
  std::atomic<uint64_t> current_tick_{0};
  // The deposit total at the base mark of the word's generation (mod 4).
  std::array<std::atomic<uint64_t>, kBases> base_{};
  // The retry total at that mark, tagged with the generation (granted()).
  std::array<std::atomic<uint64_t>, kBases> retries_at_{};

  Mutex mu_;
  std::array<Mark, kTicks> marks_ ABSL_GUARDED_BY(mu_);
  uint64_t gen_ ABSL_GUARDED_BY(mu_) = 0;
  // Every retry granted before the base mark of the current generation.
  uint64_t retries_base_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RETRY_BUDGET_LEDGER_HPP_
