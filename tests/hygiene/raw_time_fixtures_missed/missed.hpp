// Fixture for raw_time_subtraction.py --selftest: raw subtractions of times
// that the check's first version missed (it read only the names next to a
// spaced ` - `). Each marked line is an elapsed-time computation of a kind
// the rule covers: Unix-nanosecond and steady_clock differences, the
// spelling of absl::Time - absl::Time with ordinary names, an operand on a
// wrapped line, `-=`, and a `-` without spaces. Never compiled.
// clang-format off

inline void Missed() {
  // absl::ToUnixNanos differences (what the hedge book's overflow was).
  d = absl::ToUnixNanos(a) - absl::ToUnixNanos(b);                     // EXPECT-VIOLATION
  d = absl::ToUnixNanos(clock->CoarseNow()) - absl::ToUnixNanos(t0);   // EXPECT-VIOLATION
  // int64 nanosecond differences from RealClock and packed clocks.
  d = RealClock::Instance().UnixNanos() - sent_ns;                     // EXPECT-VIOLATION
  d = ns - prev_ns;                                                    // EXPECT-VIOLATION
  d = stamps[i] - stamps[j];                                           // EXPECT-VIOLATION
  // steady_clock differences.
  d = (MonotonicNanos() - mono_anchor_);                               // EXPECT-VIOLATION
  d = std::chrono::steady_clock::now().time_since_epoch().count() - t; // EXPECT-VIOLATION
  // absl::Time - absl::Time with names that do not say "time".
  d = t1 - t0;                                                         // EXPECT-VIOLATION
  d = end - begin;                                                     // EXPECT-VIOLATION
  d = enqueued - arrived;                                              // EXPECT-VIOLATION
  d = a.when() - b.when();                                             // EXPECT-VIOLATION
  d = clock_->Now()
      - started;                                                       // EXPECT-VIOLATION
  // Compound assignment and a subtraction without spaces.
  budget -= clock_->Now() - sent;                                      // EXPECT-VIOLATION
  left -= elapsed;                                                     // EXPECT-VIOLATION
  d = now_ns-at;                                                       // EXPECT-VIOLATION
}
