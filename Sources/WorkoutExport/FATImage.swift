import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Why a drive image could not be written.
public enum FATImageError: Error, Sendable, Equatable, CustomStringConvertible {
  /// A file to put in cannot be read (what, and strerror's words).
  case source(String)
  /// The image cannot be written (full, read-only, ...).
  case image(String)
  /// More than FAT32 with 32 KiB clusters holds, or a file of 4 GiB or more.
  case tooLarge(String)
  /// A name FAT's long names cannot hold.
  case invalidName(String)

  public var description: String {
    switch self {
    case .source(let text), .image(let text), .tooLarge(let text), .invalidName(let text): text
    }
  }
}

/// Writes a FAT32 file system image, whole, holding one directory of files: what a laptop sees
/// when the board is its USB drive (`workoutd/*.fit`). It is made anew each time, never
/// changed in place: a host may be reading the old one (see `UsbDrive`). Layout after
/// Microsoft's "FAT: General Overview of On-Disk Format" (FAT32 BPB, FSInfo, long names):
/// 512-byte sectors, 32 reserved (boot sector at 0, FSInfo at 1, their backups at 6 and 7), two
/// FATs, the root directory in cluster 2, then the directory and each file in runs of clusters.
/// The file is sparse: free clusters are never written.
public enum FATImage {
  /// A file to put in: its name on the drive and where its bytes are.
  public struct File: Sendable, Equatable {
    public var name: String
    public var sourcePath: String
    public init(name: String, sourcePath: String) {
      self.name = name
      self.sourcePath = sourcePath
    }
  }

  /// What was written.
  public struct Written: Sendable, Equatable {
    public var files: Int
    public var bytes: Int64
    public var imageBytes: Int64
  }

  static let sectorBytes = 512
  static let reservedSectors = 32
  /// The fewest clusters a FAT32 volume has (fewer is FAT16 to Windows and to the spec).
  static let fewestClusters = 65_525
  static let endOfChain: UInt32 = 0x0FFF_FFFF

  /// Writes `files` into `directory` of a new image at `path` (through a temporary name,
  /// synced, renamed over, its directory synced). `volumeID` is the volume's serial: a new
  /// one tells a host it is another medium. `modified` (Unix seconds) dates the directories.
  @discardableResult
  public static func write(
    _ files: [File], directory: String = "workoutd", label: String = "WORKOUTD", volumeID: UInt32,
    modified: Int64, to path: String
  ) throws(FATImageError) -> Written {
    try checkName(directory)
    var names = Set<String>()
    for file in files {
      try checkName(file.name)
      guard names.insert(file.name.uppercased()).inserted else {
        throw .invalidName("\"\(file.name)\" is in the image twice (FAT names ignore case)")
      }
    }
    // Open every source first: nothing is written if one is missing.
    var sources: [(file: File, descriptor: FileDescriptor, bytes: Int64, modified: Int64)] = []
    defer { for source in sources { try? source.descriptor.close() } }
    for file in files {
      let descriptor: FileDescriptor
      do {
        descriptor = try FileDescriptor.open(file.sourcePath, O_RDONLY | O_NOFOLLOW)
      } catch {
        throw .source("cannot open \(file.sourcePath): \(error.reason)")
      }
      guard let info = try? descriptor.status(), info.st_mode & S_IFMT == S_IFREG else {
        throw .source("\(file.sourcePath) is not a regular file")
      }
      guard info.st_size < 0x1_0000_0000 else {
        throw .tooLarge("\(file.sourcePath) is 4 GiB or more, more than a FAT file holds")
      }
      sources.append((file, descriptor, Int64(info.st_size), Int64(info.st_mtim.tv_sec)))
    }
    let payload = sources.reduce(Int64(0)) { $0 + $1.bytes }
    let layout = try Layout(payload: payload, fileBytes: sources.map(\.bytes), entriesInDirectory: files.map(\.name))

    // The directory entries, with their clusters.
    var directoryEntries = [UInt8]()
    directoryEntries += shortEntry(
      name: dotName("."), attributes: attributeDirectory, cluster: layout.directoryCluster, bytes: 0,
      modified: modified)
    directoryEntries += shortEntry(
      name: dotName(".."), attributes: attributeDirectory, cluster: 0, bytes: 0, modified: modified)
    var aliases = Set<String>()
    for (index, source) in sources.enumerated() {
      directoryEntries += namedEntries(
        source.file.name, aliases: &aliases, attributes: attributeArchive, cluster: layout.fileClusters[index],
        bytes: source.bytes, modified: source.modified)
    }
    var rootEntries = shortEntry(
      name: paddedLabel(label), attributes: attributeVolumeLabel, cluster: 0, bytes: 0, modified: modified)
    var rootAliases = Set<String>()
    rootEntries += namedEntries(
      directory, aliases: &rootAliases, attributes: attributeDirectory, cluster: layout.directoryCluster, bytes: 0,
      modified: modified)

    let output: DurableFile
    do {
      output = try DurableFile.begin(path: path)
    } catch {
      throw .image(error.description)
    }
    let imageBytes = Int64(layout.totalSectors) * Int64(sectorBytes)
    func put(_ bytes: [UInt8], at offset: Int64) throws(FATImageError) {
      do {
        try output.write(bytes, at: offset)
      } catch {
        throw .image(error.description)
      }
    }
    do {
      try output.setSize(imageBytes)
    } catch {
      throw .image(error.description)
    }
    let boot = bootSector(layout: layout, volumeID: volumeID, label: label)
    let info = fsInfoSector(freeClusters: layout.clusterCount - layout.usedClusters, nextFree: layout.usedClusters + 2)
    try put(boot, at: 0)
    try put(info, at: Int64(sectorBytes))
    try put(boot, at: 6 * Int64(sectorBytes))
    try put(info, at: 7 * Int64(sectorBytes))
    let table = layout.allocationTable()
    for copy in 0..<2 {
      try put(table, at: Int64(reservedSectors + copy * layout.fatSectors) * Int64(sectorBytes))
    }
    try put(rootEntries, at: layout.offset(ofCluster: 2))
    try put(directoryEntries, at: layout.offset(ofCluster: layout.directoryCluster))
    var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    for (index, source) in sources.enumerated() where source.bytes > 0 {
      var offset = layout.offset(ofCluster: layout.fileClusters[index])
      var left = source.bytes
      while left > 0 {
        let count: Int
        do {
          count = try source.descriptor.read(into: &buffer, limit: Int(left))
        } catch {
          throw .source("cannot read \(source.file.sourcePath): \(error.reason)")
        }
        guard count > 0 else { throw .source("\(source.file.sourcePath) got shorter while it was copied") }
        try put(Array(buffer[0..<count]), at: offset)
        offset += Int64(count)
        left -= Int64(count)
      }
    }
    do {
      try output.commit()
    } catch {
      throw .image(error.description)
    }
    return Written(files: files.count, bytes: payload, imageBytes: imageBytes)
  }

  /// ".NAME.partial" beside `path`: what an interrupted write leaves.
  public static func temporaryName(for path: String) -> String {
    let parent = parentDirectory(of: path)
    let name = path.split(separator: "/").last.map(String.init) ?? path
    return (parent == "." && !path.hasPrefix("./") ? "" : parent + "/") + "." + name + ".partial"
  }

  // MARK: - Layout

  /// Where everything goes: sizes in sectors, clusters numbered from 2 as FAT does.
  struct Layout {
    var sectorsPerCluster: Int
    var fatSectors: Int
    var totalSectors: Int
    var clusterCount: Int
    /// Cluster runs: the root directory at 2, then the directory, then each file (0 when empty).
    var rootClusters: Int
    var directoryCluster: Int
    var directoryClusters: Int
    var fileClusters: [Int]
    var fileRuns: [Int]
    var usedClusters: Int

    init(payload: Int64, fileBytes: [Int64], entriesInDirectory names: [String]) throws(FATImageError) {
      // Microsoft's table of cluster sizes by volume size (FAT32), from 512-byte clusters.
      let budget = payload + Int64(names.count) * 64 * 1024 + 4 * 1024 * 1024
      let mib: Int64 = 1024 * 1024
      sectorsPerCluster =
        switch budget {
        case ..<(256 * mib): 1
        case ..<(8 * 1024 * mib): 8
        case ..<(16 * 1024 * mib): 16
        case ..<(32 * 1024 * mib): 32
        default: 64
        }
      let clusterBytes = Int64(sectorsPerCluster * FATImage.sectorBytes)
      func clusters(_ bytes: Int64) -> Int { Int((bytes + clusterBytes - 1) / clusterBytes) }
      rootClusters = 1
      directoryCluster = 2 + rootClusters
      // ".", "..", and per file its long-name entries and its short one.
      let directoryBytes = Int64(2 + names.reduce(0) { $0 + FATImage.entryCount(forName: $1) }) * 32
      directoryClusters = max(1, clusters(directoryBytes))
      var next = directoryCluster + directoryClusters
      fileClusters = []
      fileRuns = []
      for bytes in fileBytes {
        let run = clusters(bytes)
        fileClusters.append(run == 0 ? 0 : next)
        fileRuns.append(run)
        next += run
      }
      usedClusters = next - 2
      guard usedClusters <= 0x0FFF_FFF5 - 2, budget < 2 * 1024 * 1024 * mib else {
        throw .tooLarge("\(payload) bytes of files are more than the drive image holds")
      }
      // The volume in whole MiB, grown until its clusters hold the files and number what
      // FAT32 needs. The FAT is sized for every cluster the sectors after the reserved ones
      // could hold (an upper bound), so it always covers the clusters left beside it.
      let wanted = max(usedClusters, FATImage.fewestClusters)
      var total = (FATImage.reservedSectors + wanted * sectorsPerCluster + 2047) / 2048 * 2048
      var fat = 0
      var count = 0
      while true {
        let bound = (total - FATImage.reservedSectors) / sectorsPerCluster
        fat = ((bound + 2) * 4 + FATImage.sectorBytes - 1) / FATImage.sectorBytes
        count = (total - FATImage.reservedSectors - 2 * fat) / sectorsPerCluster
        if count >= wanted { break }
        total += 2048
      }
      fatSectors = fat
      totalSectors = total
      clusterCount = count
    }

    var firstDataSector: Int { FATImage.reservedSectors + 2 * fatSectors }

    func offset(ofCluster cluster: Int) -> Int64 {
      Int64(firstDataSector + (cluster - 2) * sectorsPerCluster) * Int64(FATImage.sectorBytes)
    }

    /// The used part of one FAT (the rest is zero: free).
    func allocationTable() -> [UInt8] {
      var entries = [UInt32](repeating: 0, count: usedClusters + 2)
      entries[0] = 0x0FFF_FFF8  // the media byte (fixed disk), as the BPB says
      entries[1] = FATImage.endOfChain  // clean shut-down, no errors
      func chain(_ first: Int, _ run: Int) {
        for cluster in first..<(first + run) {
          entries[cluster] = cluster == first + run - 1 ? FATImage.endOfChain : UInt32(cluster + 1)
        }
      }
      chain(2, rootClusters)
      chain(directoryCluster, directoryClusters)
      for (first, run) in zip(fileClusters, fileRuns) where run > 0 { chain(first, run) }
      var bytes = [UInt8]()
      bytes.reserveCapacity(entries.count * 4)
      for entry in entries { bytes.appendLittleEndian(entry) }
      return bytes
    }
  }

  // MARK: - Sectors

  static func bootSector(layout: Layout, volumeID: UInt32, label: String) -> [UInt8] {
    var sector = [UInt8]()
    sector += [0xEB, 0x58, 0x90]  // jump over the BPB
    sector += Array("MSWIN4.1".utf8)  // the OEM name the spec recommends for compatibility
    sector.appendLittleEndian(UInt16(sectorBytes))
    sector.append(UInt8(layout.sectorsPerCluster))
    sector.appendLittleEndian(UInt16(reservedSectors))
    sector.append(2)  // FATs
    sector.appendLittleEndian(UInt16(0))  // root entries: 0 on FAT32
    sector.appendLittleEndian(UInt16(0))  // 16-bit total: 0, the 32-bit one is used
    sector.append(0xF8)  // media: fixed
    sector.appendLittleEndian(UInt16(0))  // 16-bit FAT size: 0 on FAT32
    sector.appendLittleEndian(UInt16(32))  // sectors per track, heads: geometry for old BIOSes
    sector.appendLittleEndian(UInt16(64))
    sector.appendLittleEndian(UInt32(0))  // hidden sectors: no partition table, the volume is the disk
    sector.appendLittleEndian(UInt32(layout.totalSectors))
    sector.appendLittleEndian(UInt32(layout.fatSectors))
    sector.appendLittleEndian(UInt16(0))  // both FATs mirrored
    sector.appendLittleEndian(UInt16(0))  // version 0.0
    sector.appendLittleEndian(UInt32(2))  // root directory cluster
    sector.appendLittleEndian(UInt16(1))  // FSInfo sector
    sector.appendLittleEndian(UInt16(6))  // backup boot sector
    sector += [UInt8](repeating: 0, count: 12)
    sector.append(0x80)  // drive number
    sector.append(0)
    sector.append(0x29)  // extended boot signature: the three fields after are there
    sector.appendLittleEndian(volumeID)
    sector += paddedLabel(label)
    sector += Array("FAT32   ".utf8)
    sector += [UInt8](repeating: 0, count: 510 - sector.count)
    sector += [0x55, 0xAA]
    return sector
  }

  static func fsInfoSector(freeClusters: Int, nextFree: Int) -> [UInt8] {
    var sector = [UInt8]()
    sector.appendLittleEndian(UInt32(0x4161_5252))
    sector += [UInt8](repeating: 0, count: 480)
    sector.appendLittleEndian(UInt32(0x6141_7272))
    sector.appendLittleEndian(UInt32(freeClusters))
    sector.appendLittleEndian(UInt32(nextFree))
    sector += [UInt8](repeating: 0, count: 12)
    sector.appendLittleEndian(UInt32(0xAA55_0000))
    return sector
  }

  // MARK: - Directory entries

  static let attributeVolumeLabel: UInt8 = 0x08
  static let attributeDirectory: UInt8 = 0x10
  static let attributeArchive: UInt8 = 0x20
  static let attributeLongName: UInt8 = 0x0F

  /// Characters a long name may not hold (and control characters).
  static let forbidden = Set("\\/:*?\"<>|".unicodeScalars)

  static func checkName(_ name: String) throws(FATImageError) {
    let units = Array(name.utf16)
    guard !name.isEmpty, units.count <= 255, name != ".", name != "..",
      !name.unicodeScalars.contains(where: { $0.value < 0x20 || forbidden.contains($0) }),
      !name.hasSuffix("."), !name.hasSuffix(" ")
    else { throw .invalidName("\"\(name)\" cannot be a FAT file name") }
  }

  /// Long-name entries (13 UTF-16 units each) and the short one.
  static func entryCount(forName name: String) -> Int { (name.utf16.count + 12) / 13 + 1 }

  static func paddedLabel(_ label: String) -> [UInt8] {
    let characters = label.uppercased().unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 }.prefix(11)
    return Array(String(String.UnicodeScalarView(characters)).utf8)
      + [UInt8](repeating: 0x20, count: 11 - characters.count)
  }

  static func dotName(_ name: String) -> [UInt8] {
    Array(name.utf8) + [UInt8](repeating: 0x20, count: 11 - name.utf8.count)
  }

  /// Characters a short name may hold besides A-Z and 0-9.
  static let shortSpecials = Set("$%'-_@~`!(){}^#&".unicodeScalars)

  /// An 8.3 alias for `name` not in `taken`: its upper-case self when it is a valid 8.3 name,
  /// else up to six of its characters, "~" and a number, and up to three of its extension's.
  static func alias(for name: String, taken: Set<String>) -> [UInt8] {
    func keep(_ text: Substring) -> String {
      String(
        String.UnicodeScalarView(
          text.uppercased().unicodeScalars.filter {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || shortSpecials.contains($0)
          }))
    }
    let dot = name.lastIndex(of: ".")
    let base = keep(dot.map { name[..<$0] } ?? name[...])
    let fileExtension = String(keep(dot.map { name[name.index(after: $0)...] } ?? "").prefix(3))
    func packed(_ base: String) -> [UInt8] {
      Array(base.utf8) + [UInt8](repeating: 0x20, count: 8 - base.utf8.count) + Array(fileExtension.utf8)
        + [UInt8](repeating: 0x20, count: 3 - fileExtension.utf8.count)
    }
    let exact = base + (fileExtension.isEmpty ? "" : "." + fileExtension)
    if exact == name.uppercased(), (1...8).contains(base.count), !taken.contains(exact) { return packed(base) }
    var number = 1
    while true {
      let tail = "~\(number)"
      let candidate = String((base.isEmpty ? "_" : base).prefix(8 - tail.count)) + tail
      let key = candidate + (fileExtension.isEmpty ? "" : "." + fileExtension)
      if !taken.contains(key) { return packed(candidate) }
      number += 1
    }
  }

  static func aliasKey(_ packed: [UInt8]) -> String {
    let base = String(decoding: packed[0..<8], as: UTF8.self).trimmingTrailingSpaces()
    let fileExtension = String(decoding: packed[8..<11], as: UTF8.self).trimmingTrailingSpaces()
    return base + (fileExtension.isEmpty ? "" : "." + fileExtension)
  }

  /// The long-name entries then the short entry of `name`.
  static func namedEntries(
    _ name: String, aliases: inout Set<String>, attributes: UInt8, cluster: Int, bytes: Int64, modified: Int64
  ) -> [UInt8] {
    let short = alias(for: name, taken: aliases)
    aliases.insert(aliasKey(short))
    let checksum = short.reduce(UInt8(0)) { (($0 & 1) << 7 &+ ($0 >> 1)) &+ $1 }
    let units = Array(name.utf16)
    let pieces = (units.count + 12) / 13
    var entries = [UInt8]()
    // Stored last piece first; the first stored carries 0x40.
    for piece in stride(from: pieces, through: 1, by: -1) {
      var chunk = Array(units[((piece - 1) * 13)..<min(piece * 13, units.count)])
      if chunk.count < 13 {
        chunk.append(0)
        chunk += [UInt16](repeating: 0xFFFF, count: 13 - chunk.count)
      }
      var entry = [UInt8]()
      entry.append(UInt8(piece) | (piece == pieces ? 0x40 : 0))
      for unit in chunk[0..<5] { entry.appendLittleEndian(unit) }
      entry.append(attributeLongName)
      entry.append(0)
      entry.append(checksum)
      for unit in chunk[5..<11] { entry.appendLittleEndian(unit) }
      entry.appendLittleEndian(UInt16(0))
      for unit in chunk[11..<13] { entry.appendLittleEndian(unit) }
      entries += entry
    }
    return entries + shortEntry(name: short, attributes: attributes, cluster: cluster, bytes: bytes, modified: modified)
  }

  static func shortEntry(name: [UInt8], attributes: UInt8, cluster: Int, bytes: Int64, modified: Int64) -> [UInt8] {
    let (date, time) = dosDateTime(modified)
    var entry = name
    entry.append(attributes)
    entry.append(0)  // no NT case flags: the long name has the case
    entry.append(0)  // creation tenths
    entry.appendLittleEndian(time)
    entry.appendLittleEndian(date)
    entry.appendLittleEndian(date)  // last access
    entry.appendLittleEndian(UInt16(truncatingIfNeeded: cluster >> 16))
    entry.appendLittleEndian(time)
    entry.appendLittleEndian(date)
    entry.appendLittleEndian(UInt16(truncatingIfNeeded: cluster))
    entry.appendLittleEndian(UInt32(truncatingIfNeeded: bytes))
    return entry
  }

  /// FAT's date and time words for Unix seconds, in UTC (Linux mounts FAT in UTC unless told
  /// otherwise); before 1980 is 1980-01-01, FAT's epoch.
  static func dosDateTime(_ seconds: Int64) -> (date: UInt16, time: UInt16) {
    let time = UTCTime(seconds: max(seconds, 315_532_800))
    let year = min(max(time.year - 1980, 0), 127)
    let date = UInt16(year << 9 | time.month << 5 | time.day)
    let clock = UInt16(time.hour << 11 | time.minute << 5 | time.second / 2)
    return (date, clock)
  }

  // MARK: - I/O

  static func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}

extension [UInt8] {
  fileprivate mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
    Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
  }
}

extension String {
  fileprivate func trimmingTrailingSpaces() -> String {
    var text = self
    while text.hasSuffix(" ") { text.removeLast() }
    return text
  }
}
