import CLinuxShims

/// The process's own memory, for a service that lives for months on a board with little.
public enum ProcessMemory {
  /// Gives the heap's free memory back to the kernel (malloc_trim(3)): glibc keeps what a
  /// thread freed in that thread's arena for its next use, so a rare large job (a catch-up of
  /// exports) would otherwise stay in the service's resident size. True if any was released.
  @discardableResult
  public static func releaseFreeHeap() -> Bool {
    shim_release_free_heap() == 1
  }
}
