import Foundation
import Testing

@testable import WorkoutExport

/// The board's USB drive image, read back by dosfstools' fsck.fat and by mtools: two FAT
/// implementations that are not ours.
@Suite("FAT32 images of the exports")
struct FATImageTests {
  /// Files of awkward sizes (empty, one byte, a cluster exactly, one over, a large one) under
  /// export-style names that share their first characters (so their 8.3 aliases must differ).
  static func sources(in directory: ExportDirectory) throws -> [FATImage.File] {
    var generator = SystemRandomNumberGenerator()
    let sizes = [0, 1, 511, 512, 513, 4096, 1_500_000] + (0..<30).map { 100 + $0 * 997 }
    var files: [FATImage.File] = []
    for (index, size) in sizes.enumerated() {
      let name = String(format: "20261124-%06dZ-3f2a9c%02x.fit", 103_015 + index, index)
      let path = directory.path + "/" + name
      let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      files.append(FATImage.File(name: name, sourcePath: path))
    }
    let odd = directory.path + "/odd"
    try Data("a name with spaces, upper and lower case, and more than one dot".utf8).write(
      to: URL(fileURLWithPath: odd))
    files.append(FATImage.File(name: "Évening ride (Col du Galibier).v2.GPX", sourcePath: odd))
    return files
  }

  @Test func fsckFindsNothingWrongAndMtoolsReadsEveryFileBackByteForByte() throws {
    let directory = ExportDirectory()
    let files = try Self.sources(in: directory)
    let image = directory.path + "/drive.img"
    let written = try FATImage.write(files, volumeID: 0x1234_ABCD, modified: 1_764_000_000, to: image)
    #expect(written.files == files.count)
    #expect(!FileManager.default.fileExists(atPath: FATImage.temporaryName(for: image)))

    let check = try #require(
      try runTool("fsck.fat", ["-n", "-v", "-V", image], in: directory), "fsck.fat is not installed: `make deps`")
    #expect(check.status == 0, "\(check.output)\(check.errors)")
    #expect(check.output.contains("32 bit entries"), "\(check.output)")
    #expect(!check.output.contains("differ") && !check.output.lowercased().contains("invalid"), "\(check.output)")

    let listing = try #require(
      try runTool("mdir", ["-i", image, "-b", "::/workoutd"], in: directory), "mtools is not installed: `make deps`")
    #expect(listing.status == 0, "\(listing.errors)")
    let listed = Set(listing.output.split(separator: "\n").map { String($0.split(separator: "/").last ?? "") })
    #expect(listed == Set(files.map(\.name)), "\(listing.output)")

    for file in files {
      let back = directory.path + "/back"
      try? FileManager.default.removeItem(atPath: back)
      let copy = try #require(
        try runTool("mcopy", ["-n", "-i", image, "::/workoutd/" + file.name, back], in: directory))
      #expect(copy.status == 0, "\(file.name): \(copy.errors)")
      #expect(
        FileManager.default.contents(atPath: back) == FileManager.default.contents(atPath: file.sourcePath),
        "\(file.name) differs")
    }

    let info = try #require(try runTool("minfo", ["-i", image, "::"], in: directory))
    #expect(info.output.contains("serial number: 1234ABCD"), "\(info.output)")
    #expect(info.output.contains("WORKOUTD"), "\(info.output)")
  }

  @Test func anEmptyDriveIsAValidVolumeWithAnEmptyDirectory() throws {
    let directory = ExportDirectory()
    let image = directory.path + "/drive.img"
    try FATImage.write([], volumeID: 1, modified: 0, to: image)
    let check = try #require(try runTool("fsck.fat", ["-n", "-V", image], in: directory))
    #expect(check.status == 0, "\(check.output)\(check.errors)")
    let listing = try #require(try runTool("mdir", ["-i", image, "-b", "::/workoutd"], in: directory))
    #expect(listing.status == 0 && listing.output.isEmpty, "\(listing.output)\(listing.errors)")
  }

  @Test func aMissingFileLeavesTheImageThereAsItWas() throws {
    let directory = ExportDirectory()
    let image = directory.path + "/drive.img"
    let files = Array(try Self.sources(in: directory).prefix(3))
    try FATImage.write(files, volumeID: 1, modified: 0, to: image)
    let before = FileManager.default.contents(atPath: image)
    let missing = FATImage.File(name: "gone.fit", sourcePath: directory.path + "/gone.fit")
    #expect {
      try FATImage.write(files + [missing], volumeID: 2, modified: 0, to: image)
    } throws: { error in
      guard case .source(let text) = error as? FATImageError else { return false }
      return text.contains("gone.fit") && text.contains("No such file")
    }
    #expect(FileManager.default.contents(atPath: image) == before)
    #expect(!FileManager.default.fileExists(atPath: FATImage.temporaryName(for: image)))
  }

  @Test func namesFATCannotHoldOrHoldTwiceAreRefused() throws {
    let directory = ExportDirectory()
    let path = directory.path + "/a"
    FileManager.default.createFile(atPath: path, contents: Data([1]))
    for names in [["a:b.fit"], ["x.fit", "X.FIT"], ["trailing."], [""]] {
      #expect(throws: FATImageError.self) {
        try FATImage.write(
          names.map { FATImage.File(name: $0, sourcePath: path) }, volumeID: 1, modified: 0,
          to: directory.path + "/drive.img")
      }
    }
  }

  /// Cluster sizes follow the volume's size (Microsoft's FAT32 table), and every layout has the
  /// clusters FAT32 needs and a FAT large enough for them.
  @Test(arguments: [Int64(0), 200 << 20, 300 << 20, 9 << 30, 20 << 30])
  func layoutsAreFAT32WithTheirFATLargeEnough(payload: Int64) throws {
    let layout = try FATImage.Layout(payload: payload, fileBytes: [payload], entriesInDirectory: ["a.fit"])
    #expect(layout.clusterCount >= FATImage.fewestClusters)
    #expect(layout.clusterCount >= layout.usedClusters)
    #expect((layout.clusterCount + 2) * 4 <= layout.fatSectors * FATImage.sectorBytes)
    #expect(
      layout.firstDataSector + layout.clusterCount * layout.sectorsPerCluster <= layout.totalSectors)
    let expected =
      switch payload {
      case ..<(250 << 20): 1
      case ..<(8 << 30): 8
      case ..<(16 << 30): 16
      default: 32
      }
    #expect(layout.sectorsPerCluster == expected)
  }
}
