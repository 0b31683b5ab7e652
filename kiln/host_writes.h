// Host copies that Python may write through (writable NumPy views and memoryviews, as MLX
// allows). Such a buffer breaks the rule that a Storage is immutable once computed, so its
// device copy must be refreshed from the host before a GPU read: while a writable view lives,
// and once after the last one is released. Storage::mark_host_writable() flags the buffers
// this table knows, so that the GPU backend consults it only for them.
#pragma once

namespace kiln {

class Storage;

namespace host_writes {

/** A writable view of `st`'s host copy was handed out (also marks `st` host-writable). */
void add_writer(Storage& st);
/** That view was released; writes made through it are still to be seen by the GPU. */
void remove_writer(Storage& st);
/** Whether the GPU must refresh its copy of `st` from the host before reading it: while a
 * writer lives, and once after the last one is released (which this call clears). */
bool take_refresh(const Storage& st);
/** Drops `st` from the table (its destructor). */
void forget(const Storage& st);

}  // namespace host_writes
}  // namespace kiln
