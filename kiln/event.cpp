#include "kiln/event.h"

#include "kiln/scheduler.h"

namespace kiln {

void Event::wait() const {
  if (valid_) scheduler::wait(stream_, value_);
}

bool Event::is_signaled() const { return !valid_ || scheduler::is_done(stream_, value_); }

}  // namespace kiln
