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
}
