import CLinuxShims

/// The process's own memory, for a service that lives for months on a board with little.
public enum ProcessMemory {
  /// Gives the heap's free memory back to the kernel (malloc_trim(3)): glibc keeps what a
  /// thread freed in that thread's arena for its next use, so a rare large job (a catch-up of
  /// exports) would otherwise stay in the service's resident size. True if any was released.
  /// Makes every thread allocate from malloc's one main arena (glibc gives each thread that
  /// allocates beside another an arena of its own, up to 8 per CPU, and each keeps what it freed
  /// for its next use). The service's threads are few and rarely allocate at the same moment;
  /// one arena makes the integrity check's and the exporter's freed memory the engine's too
  /// (peak RSS at a start after a kill -9 on a 1 GB database: 16.0 -> 15.4 MiB, make bench).
  /// Call it before any thread is started.
  @discardableResult
  public static func useOneHeapArena() -> Bool {
    shim_use_one_malloc_arena() == 1
  }

  @discardableResult
  public static func releaseFreeHeap() -> Bool {
    shim_release_free_heap() == 1
  }
}
