import Testing
import WorkoutExport

/// What the rider is told about a USB stick the copier cannot use, from udev's properties.
struct StickSuitabilityTests {
  /// `udevadm info --query=property` of an NTFS partition on a QEMU stick (Debian 12).
  let ntfsPartition = """
    DEVPATH=/devices/pci0000:00/0000:00:02.0/usb1/1-1/1-1:1.0/host2/target2:0:0/2:0:0:0/block/sdb/sdb1
    DEVNAME=/dev/sdb1
    DEVTYPE=partition
    DISKSEQ=12
    PARTN=1
    MAJOR=8
    MINOR=17
    SUBSYSTEM=block
    ID_BUS=usb
    ID_FS_UUID=5A1C44D23F0E7B11
    ID_FS_UUID_ENC=5A1C44D23F0E7B11
    ID_FS_TYPE=ntfs
    ID_FS_USAGE=filesystem
    ID_PART_ENTRY_TYPE=0x7
    ID_PART_ENTRY_NUMBER=1
    TAGS=:systemd:
    """

  func device(_ name: String, _ properties: [String: String]) -> StickSuitability.Device {
    .init(name: name, properties: properties)
  }

  @Test func udevadmPropertiesAreKeyValueLines() {
    let properties = StickSuitability.properties(fromUdevadm: ntfsPartition + "\nODD LINE\nEMPTY=\n")
    #expect(properties["ID_FS_TYPE"] == "ntfs")
    #expect(properties["DEVPATH"]?.hasSuffix("/block/sdb/sdb1") == true)
    #expect(properties["TAGS"] == ":systemd:")
    #expect(properties["EMPTY"] == "")
    #expect(properties["ODD LINE"] == nil)
  }

  @Test func aFileSystemWeDoNotWriteIsNamedWithTheRemedy() {
    let stick = device("sdb1", StickSuitability.properties(fromUdevadm: ntfsPartition))
    #expect(
      StickSuitability.refusal(of: stick)
        == "holds an NTFS file system, which workoutd does not write: format it FAT32, exFAT or ext4 to take the rides")
    let mac = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": "hfsplus", "ID_FS_UUID": "x"])
    #expect(StickSuitability.refusal(of: mac)?.hasPrefix("holds a Mac (HFS+) file system") == true)
    let other = device("sdb", ["DEVTYPE": "disk", "ID_FS_TYPE": "btrfs", "ID_FS_UUID": "x"])
    #expect(StickSuitability.refusal(of: other)?.hasPrefix("holds a file system of type btrfs, which") == true)
  }

  @Test func aStickWithNoFileSystemIsUnformattedOrDamaged() {
    let blank = device("sdb", ["DEVTYPE": "disk", "ID_BUS": "usb"])
    #expect(
      StickSuitability.refusal(of: blank)
        == "no file system found on it (unformatted or damaged): format it FAT32, exFAT or ext4 to take the rides")
    let emptyPartition = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": ""])
    #expect(StickSuitability.refusal(of: emptyPartition)?.hasPrefix("no file system found on it") == true)
  }

  @Test func oneWeWriteWithoutAUUIDCannotBeKnownAgain() {
    let noUUID = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": "vfat"])
    #expect(StickSuitability.refusal(of: noUUID)?.hasPrefix("its FAT file system has no UUID") == true)
  }

  @Test func whatTheCopierTakesIsNoConcern() {
    for type in ["vfat", "exfat", "ext4"] {
      let usable = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": type, "ID_FS_UUID": "1234-ABCD"])
      #expect(StickSuitability.refusal(of: usable) == nil, "\(type)")
    }
  }

  @Test func anotherPartitionThatTakesTheRidesMakesTheRestNoConcern() {
    let ntfs = device("sdb2", ["DEVTYPE": "partition", "ID_FS_TYPE": "ntfs", "ID_FS_UUID": "x"])
    let fat = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": "vfat", "ID_FS_UUID": "1234-ABCD"])
    let swap = device("sdb3", ["DEVTYPE": "partition", "ID_FS_TYPE": "swap", "ID_FS_UUID": "y"])
    #expect(StickSuitability.refusal(of: ntfs, siblings: [fat, swap]) == nil)
    #expect(StickSuitability.refusal(of: ntfs, siblings: [swap]) != nil, "no partition of it takes them")
    let fatWithoutUUID = device("sdb1", ["DEVTYPE": "partition", "ID_FS_TYPE": "vfat"])
    #expect(StickSuitability.refusal(of: ntfs, siblings: [fatWithoutUUID]) != nil)
  }
}
