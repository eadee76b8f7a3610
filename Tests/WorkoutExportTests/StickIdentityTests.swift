import Foundation
import Testing
import WorkoutExport

/// A stick's name in the export table comes from udev's /dev/disk/by-uuid link to its partition.
struct StickIdentityTests {
  @Test func thePartitionIsKnownByTheUUIDWhoseLinkLeadsToIt() throws {
    let root = NSTemporaryDirectory() + "by-uuid-" + UUID().uuidString
    let byUUID = root + "/by-uuid"
    try FileManager.default.createDirectory(atPath: byUUID, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    for name in ["sda1", "sdb1"] { FileManager.default.createFile(atPath: root + "/" + name, contents: nil) }
    try FileManager.default.createSymbolicLink(atPath: byUUID + "/1234-ABCD", withDestinationPath: "../sda1")
    try FileManager.default.createSymbolicLink(
      atPath: byUUID + "/0f5e7c2a-9a51-4b43-8e0c-5d1f3b2a7e66", withDestinationPath: "../sdb1")
    #expect(StickIdentity.targetName(forDevice: root + "/sda1", byUUID: byUUID) == "usb:1234-ABCD")
    #expect(
      StickIdentity.targetName(forDevice: root + "/sdb1", byUUID: byUUID)
        == "usb:0f5e7c2a-9a51-4b43-8e0c-5d1f3b2a7e66")
    FileManager.default.createFile(atPath: root + "/sdc1", contents: nil)
    #expect(StickIdentity.targetName(forDevice: root + "/sdc1", byUUID: byUUID) == nil, "no UUID: not known")
    #expect(StickIdentity.targetName(forDevice: root + "/gone", byUUID: byUUID) == nil)
    #expect(StickIdentity.targetName(forDevice: root + "/sda1", byUUID: root + "/none") == nil)
  }

  /// A sysfs tree as the kernel lays it out: /sys/class/block links into the device's directory,
  /// partitions as subdirectories of their disk with a `partition` file.
  func sysfs(_ root: String, disk: String, major: Int, partitions: Int) throws {
    let fm = FileManager.default
    let diskDir = root + "/devices/usb1/block/" + disk
    try fm.createDirectory(atPath: root + "/class/block", withIntermediateDirectories: true)
    try fm.createDirectory(atPath: diskDir, withIntermediateDirectories: true)
    _ = fm.createFile(atPath: diskDir + "/dev", contents: Data("\(major):0\n".utf8))
    try fm.createSymbolicLink(atPath: root + "/class/block/" + disk, withDestinationPath: diskDir)
    for n in 0..<partitions {
      let name = disk + String(n + 1)
      try fm.createDirectory(atPath: diskDir + "/" + name, withIntermediateDirectories: true)
      _ = fm.createFile(atPath: diskDir + "/" + name + "/dev", contents: Data("\(major):\(n + 1)\n".utf8))
      _ = fm.createFile(atPath: diskDir + "/" + name + "/partition", contents: Data("\(n + 1)\n".utf8))
      try fm.createSymbolicLink(atPath: root + "/class/block/" + name, withDestinationPath: diskDir + "/" + name)
    }
  }

  @Test func aDiskTheBoardRunsFromIsNotAStick() throws {
    let root = NSTemporaryDirectory() + "sysfs-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: root) }
    try sysfs(root, disk: "sda", major: 8, partitions: 2)
    try sysfs(root, disk: "sdb", major: 9, partitions: 1)
    try sysfs(root, disk: "sdc", major: 10, partitions: 0)
    let block = root + "/class/block"
    // A Pi booted from a USB SSD: sda2 is /, sda1 the firmware partition.
    let mountinfo = """
      22 1 8:2 / / rw,noatime shared:1 - ext4 /dev/sda2 rw
      23 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw
      40 22 8:1 / /boot/firmware rw,relatime shared:30 - vfat /dev/sda1 rw
      """
    #expect(
      StickIdentity.mountedFileSystem(onDiskOf: "sda1", mountinfo: mountinfo, sysClassBlock: block) == "sda2 on /")
    #expect(
      StickIdentity.mountedFileSystem(onDiskOf: "sda2", mountinfo: mountinfo, sysClassBlock: block) == "sda2 on /")
    #expect(StickIdentity.mountedFileSystem(onDiskOf: "sda", mountinfo: mountinfo, sysClassBlock: block) == "sda2 on /")
    #expect(StickIdentity.mountedFileSystem(onDiskOf: "sdb1", mountinfo: mountinfo, sysClassBlock: block) == nil)
    #expect(StickIdentity.mountedFileSystem(onDiskOf: "sdc", mountinfo: mountinfo, sysClassBlock: block) == nil)
    // A superfloppy someone mounted by hand.
    let byHand = mountinfo + "\n77 22 10:0 / /mnt/stick rw - vfat /dev/sdc rw"
    #expect(
      StickIdentity.mountedFileSystem(onDiskOf: "sdc", mountinfo: byHand, sysClassBlock: block) == "sdc on /mnt/stick")
    #expect(StickIdentity.mountedFileSystem(onDiskOf: "gone1", mountinfo: mountinfo, sysClassBlock: block) == nil)
    // The kernel's write-protect flag.
    _ = FileManager.default.createFile(atPath: block + "/sdb1/ro", contents: Data("1\n".utf8))
    _ = FileManager.default.createFile(atPath: block + "/sdc/ro", contents: Data("0\n".utf8))
    #expect(StickIdentity.isWriteProtected("sdb1", sysClassBlock: block))
    #expect(!StickIdentity.isWriteProtected("sdc", sysClassBlock: block))
    #expect(!StickIdentity.isWriteProtected("gone1", sysClassBlock: block))
  }
}
