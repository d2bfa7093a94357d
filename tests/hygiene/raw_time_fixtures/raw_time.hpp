// Fixture for raw_time_subtraction.py --selftest: each line carrying the
// violation mark must be reported, and no other. Never compiled.
// clang-format off
// A comment saying now - then is not code.

inline void Sites() {
  d = now - then;                          // EXPECT-VIOLATION
  d = clock_->Now() - last_success_;       // EXPECT-VIOLATION
  d = now_ns - at;                         // EXPECT-VIOLATION
  d = when_ - clock_->Now();               // EXPECT-VIOLATION
  d = absl::Now() - opened;                // EXPECT-VIOLATION
  d = now - s.start;                       // EXPECT-VIOLATION
  d = now - *state.recover_since;          // EXPECT-VIOLATION
  d = static_cast<uint64_t>(now) - static_cast<uint64_t>(start);  // EXPECT-VIOLATION
  d = st.expires_at - absl::UnixEpoch();   // EXPECT-VIOLATION
  d = ElapsedSince(now, then);
  d = samples - drops;
  d = size_ - 1;
  s = "now - then";
  d = now - then;  // raw-time-ok: reviewed, with a reason
  // raw-time-ok: the marker on the comment line above
  d = deadline - now;
  /* now - then */ d = a - b;
  n = v.end() - v.begin();
  x = 1e-9 * y;
  p->next = q;
  --i;
  return -1;
}
