// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A bounded double-ended ring of `std::optional<E>` slots: popping at either
// end and the rare removal from the middle never allocate, and an element
// is constructed in place in its slot, so E needs no default constructor.
// The slots are allocated as the ring fills, not up front: it starts with
// kInitialSlots (or its capacity, if smaller) and doubles, up to its
// capacity, when a push finds them all in use, so a queue created at its
// largest capacity (2^24) commits a few KiB, not 640 MB, and one that
// fills allocates about log2(capacity / 64) times in its life. The
// disciplined queue (admission_queue.hpp) keeps its items here. Not
// thread-safe: its owner locks.

#ifndef DEGRADE_DETAIL_OVERLOAD_SLOT_RING_HPP_
#define DEGRADE_DETAIL_OVERLOAD_SLOT_RING_HPP_

#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

template <typename E>
class SlotRing {
 public:
  // The slots a ring starts with (fewer if its capacity is smaller).
  static constexpr std::size_t kInitialSlots = 64;

  // REQUIRES: capacity > 0.
  explicit SlotRing(std::size_t capacity)
      : capacity_(capacity),
        allocated_(capacity < kInitialSlots ? capacity : kInitialSlots),
        slots_(std::make_unique<std::optional<E>[]>(allocated_)) {}

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  // The slots allocated so far: in [min(capacity, kInitialSlots), capacity].
  std::size_t allocated() const { return allocated_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == capacity_; }

  // i = 0 is the front (oldest pushed at the back).
  E& at(std::size_t i) { return *slots_[Index(i)]; }
  const E& at(std::size_t i) const { return *slots_[Index(i)]; }
  E& front() { return at(0); }
  E& back() { return at(size_ - 1); }

  // Makes room for one more element: doubles the slots (up to capacity)
  // when every allocated one is in use, moving nothing until the new array
  // exists. Returns false, the ring unchanged, when that allocation fails:
  // growth happens while the queue fills, under overload, and the caller
  // must be able to refuse rather than throw and lose its item.
  // References into the ring are invalid after a growth.
  // REQUIRES: !full().
  bool MakeRoom() noexcept { return size_ < allocated_ || Grow(std::nothrow); }

  // REQUIRES: !full(). Grows as MakeRoom() does, but a failed allocation
  // throws std::bad_alloc (call MakeRoom() first not to).
  void push_back(E&& e) {
    if (size_ == allocated_) Grow();
    slots_[Index(size_)].emplace(std::move(e));
    ++size_;
  }

  // REQUIRES: !empty().
  E pop_front() {
    E e = Take(Index(0));
    head_ = head_ + 1 == allocated_ ? 0 : head_ + 1;
    --size_;
    return e;
  }
  E pop_back() {
    E e = Take(Index(size_ - 1));
    --size_;
    return e;
  }

  // Removes the element at `i`, keeping the order: the shorter side moves
  // one slot (the ones in front of it back, or the ones behind it forward),
  // so removing near either end is cheap: O(min(i, size - i)).
  // REQUIRES: i < size().
  E remove_at(std::size_t i) {
    E e = Take(Index(i));
    if (i < size_ - 1 - i) {
      for (std::size_t j = i; j > 0; --j) {
        std::optional<E>& prev = slots_[Index(j - 1)];
        slots_[Index(j)].emplace(std::move(*prev));
        prev.reset();
      }
      head_ = head_ + 1 == allocated_ ? 0 : head_ + 1;
    } else {
      for (std::size_t j = i; j + 1 < size_; ++j) {
        std::optional<E>& next = slots_[Index(j + 1)];
        slots_[Index(j)].emplace(std::move(*next));
        next.reset();
      }
    }
    --size_;
    return e;
  }

 private:
  std::size_t Index(std::size_t i) const {
    const std::size_t k = head_ + i;
    return k >= allocated_ ? k - allocated_ : k;
  }

  E Take(std::size_t slot) {
    E e = std::move(*slots_[slot]);
    slots_[slot].reset();
    return e;
  }

  // Doubles the slots (up to capacity_), moving the elements to the front
  // of the new array in order.
  // Without `std::nothrow`, a failed allocation throws std::bad_alloc.
  void Grow() { Adopt(std::make_unique<std::optional<E>[]>(GrownSize())); }
  // Returns false, the ring unchanged, if the allocation fails (no `try`:
  // the library builds without exceptions).
  bool Grow(const std::nothrow_t& nothrow) noexcept {
    std::unique_ptr<std::optional<E>[]> bigger(
        new (nothrow) std::optional<E>[GrownSize()]);
    if (bigger == nullptr) return false;
    Adopt(std::move(bigger));
    return true;
  }
  std::size_t GrownSize() const {
    return allocated_ > capacity_ / 2 ? capacity_ : allocated_ * 2;
  }
  void Adopt(std::unique_ptr<std::optional<E>[]> bigger) noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      bigger[i].emplace(Take(Index(i)));
    }
    slots_ = std::move(bigger);
    allocated_ = GrownSize();
    head_ = 0;
  }

  const std::size_t capacity_;
  std::size_t allocated_;
  std::unique_ptr<std::optional<E>[]> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_OVERLOAD_SLOT_RING_HPP_
