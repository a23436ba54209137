package chsql

import "strings"

// clickHouseNames maps the lower-cased names of ClickHouse functions that
// are spelled with capitals (toStartOfMonth, MD5) to their spelling.
// ClickHouse matches most function names case-sensitively, while the
// parser lower-cases unquoted names, so toStartOfMonth(ts) arrives as
// tostartofmonth. Mapping a name ClickHouse knows only changes calls that
// would otherwise fail as an unknown function. Built from
//
//   - ClickHouse 18.16: SELECT name FROM system.functions WHERE NOT
//     case_insensitive AND name != lower(name) (complete for 18.16);
//   - current releases: the names with capitals, not in 18.16, listed in
//     ClickHouse's tests/queries/0_stateless/
//     02415_all_new_functions_must_be_documented.reference (not complete:
//     a newer name missing here still works back-quoted, `name`(…)).
var clickHouseNames = map[string]string{}

// clickHouseAggregates are ClickHouse 18.16's aggregate functions
// (system.functions WHERE is_aggregate), lower-cased, to which a
// combinator suffix may be added (countIf, uniqExactState).
var clickHouseAggregates = map[string]string{}

func init() {
	for _, list := range []string{clickHouse1816Names, clickHouseNewerNames} {
		for _, n := range strings.Fields(list) {
			clickHouseNames[strings.ToLower(n)] = n
		}
	}
	for _, n := range strings.Fields(clickHouse1816Aggregates) {
		clickHouseAggregates[strings.ToLower(n)] = n
	}
}

// combinators are ClickHouse's aggregate function combinators, longest
// first where one ends another (MergeState before State). 18.16 has If,
// Array, State, Merge, MergeState and ForEach; the others came later.
var combinators = []string{"MergeState", "SimpleState", "State", "Merge", "If", "Array", "ForEach",
	"OrDefault", "OrNull", "Resample", "Distinct", "Map", "ArgMin", "ArgMax"}

// clickHouseName returns ClickHouse's spelling of the lower-cased function
// name lower: a function it has, or an aggregate function with
// combinators (countif is countIf).
func clickHouseName(lower string) (string, bool) {
	if n, ok := clickHouseNames[lower]; ok {
		return n, true
	}
	return aggregateName(lower)
}

func aggregateName(lower string) (string, bool) {
	if n, ok := clickHouseAggregates[lower]; ok {
		return n, true
	}
	for _, c := range combinators {
		base, ok := strings.CutSuffix(lower, strings.ToLower(c))
		if !ok || base == "" {
			continue
		}
		if n, ok := aggregateName(base); ok {
			return n + c, true
		}
	}
	return "", false
}

const clickHouse1816Names = `
	IPv4NumToString IPv4NumToStringClassC IPv4StringToNum IPv4ToIPv6 IPv6NumToString IPv6StringToNum
	MACNumToString MACStringToNum MACStringToOUI MD5 OSHierarchy OSIn OSToRoot SEHierarchy SEIn
	SEToRoot SHA1 SHA224 SHA256 URLHash URLHierarchy URLPathHierarchy UUIDNumToString UUIDStringToNum
	addDays addHours addMinutes addMonths addSeconds addWeeks addYears alphaTokens anyHeavy anyLast
	appendTrailingCharIfAbsent argMax argMin arrayAll arrayConcat arrayCount arrayCumSum
	arrayCumSumNonNegative arrayDifference arrayDistinct arrayElement arrayEnumerate
	arrayEnumerateDense arrayEnumerateUniq arrayExists arrayFilter arrayFirst arrayFirstIndex
	arrayIntersect arrayJoin arrayMap arrayPopBack arrayPopFront arrayPushBack arrayPushFront
	arrayReduce arrayResize arrayReverse arrayReverseSort arraySlice arraySort arrayStringConcat
	arraySum arrayUniq assumeNotNull bitAnd bitNot bitOr bitRotateLeft bitRotateRight bitShiftLeft
	bitShiftRight bitTest bitTestAll bitTestAny bitXor bitmaskToArray bitmaskToList blockNumber
	blockSize caseWithExpr caseWithExpression caseWithoutExpr caseWithoutExpression cityHash64
	concatAssumeInjective convertCharset corrStable countEqual covarPop covarPopStable covarSamp
	covarSampStable currentDatabase cutFragment cutIPv6 cutQueryString cutQueryStringAndFragment
	cutToFirstSignificantSubdomain cutURLParameter cutWWW decodeURLComponent
	defaultValueOfArgumentType dictGet dictGetDate dictGetDateOrDefault dictGetDateTime
	dictGetDateTimeOrDefault dictGetFloat32 dictGetFloat32OrDefault dictGetFloat64
	dictGetFloat64OrDefault dictGetHierarchy dictGetInt16 dictGetInt16OrDefault dictGetInt32
	dictGetInt32OrDefault dictGetInt64 dictGetInt64OrDefault dictGetInt8 dictGetInt8OrDefault
	dictGetOrDefault dictGetString dictGetStringOrDefault dictGetUInt16 dictGetUInt16OrDefault
	dictGetUInt32 dictGetUInt32OrDefault dictGetUInt64 dictGetUInt64OrDefault dictGetUInt8
	dictGetUInt8OrDefault dictGetUUID dictGetUUIDOrDefault dictHas dictIsIn domainWithoutWWW
	dumpColumnStructure emptyArrayDate emptyArrayDateTime emptyArrayFloat32 emptyArrayFloat64
	emptyArrayInt16 emptyArrayInt32 emptyArrayInt64 emptyArrayInt8 emptyArrayString emptyArrayToSingle
	emptyArrayUInt16 emptyArrayUInt32 emptyArrayUInt64 emptyArrayUInt8 endsWith extractAll
	extractURLParameter extractURLParameterNames extractURLParameters farmHash64 finalizeAggregation
	findClusterIndex findClusterValue firstSignificantSubdomain formatDateTime formatReadableSize
	generateUUIDv4 getSizeOfEnumType globalIn globalNotIn greatCircleDistance greaterOrEquals
	groupArray groupArrayInsertAt groupBitAnd groupBitOr groupBitXor groupUniqArray halfMD5 hasAll
	hasAny hasColumnInTable hostName indexHint indexOf intDiv intDivOrZero intExp10 intExp2 intHash32
	intHash64 isFinite isInfinite isNaN isNotNull isNull joinGet jumpConsistentHash lengthUTF8
	lessOrEquals lowCardinalityIndices lowCardinalityKeys lowerUTF8 maxIntersections
	maxIntersectionsPosition medianDeterministic medianExact medianExactWeighted medianTDigest
	medianTDigestWeighted medianTiming medianTimingWeighted metroHash64 modelEvaluate multiIf
	murmurHash2_32 murmurHash2_64 murmurHash3_128 murmurHash3_32 murmurHash3_64 notEmpty notEquals
	notIn notLike parseDateTimeBestEffort parseDateTimeBestEffortOrNull parseDateTimeBestEffortOrZero
	pathFull pointInEllipses pointInPolygon positionCaseInsensitive positionCaseInsensitiveUTF8
	positionUTF8 quantileDeterministic quantileExact quantileExactWeighted quantileTDigest
	quantileTDigestWeighted quantileTiming quantileTimingWeighted quantilesDeterministic
	quantilesExact quantilesExactWeighted quantilesTDigest quantilesTDigestWeighted quantilesTiming
	quantilesTimingWeighted queryString queryStringAndFragment randConstant regionHierarchy regionIn
	regionToArea regionToCity regionToContinent regionToCountry regionToDistrict regionToName
	regionToPopulation regionToTopContinent reinterpretAsDate reinterpretAsDateTime
	reinterpretAsFixedString reinterpretAsFloat32 reinterpretAsFloat64 reinterpretAsInt16
	reinterpretAsInt32 reinterpretAsInt64 reinterpretAsInt8 reinterpretAsString reinterpretAsUInt16
	reinterpretAsUInt32 reinterpretAsUInt64 reinterpretAsUInt8 replaceAll replaceOne replaceRegexpAll
	replaceRegexpOne reverseUTF8 roundAge roundDuration roundToExp2 rowNumberInAllBlocks
	rowNumberInBlock runningAccumulate runningDifference runningDifferenceStartingWithFirstValue
	sequenceCount sequenceMatch sipHash128 sipHash64 sleepEachRow splitByChar splitByString startsWith
	stddevPop stddevPopStable stddevSamp stddevSampStable substringUTF8 subtractDays subtractHours
	subtractMinutes subtractMonths subtractSeconds subtractWeeks subtractYears sumKahan sumMap
	sumWithOverflow sumburConsistentHash throwIf timeSlot timeSlots toColumnTypeName toDate
	toDateOrNull toDateOrZero toDateTime toDateTimeOrNull toDateTimeOrZero toDayOfMonth toDayOfWeek
	toDayOfYear toDecimal128 toDecimal32 toDecimal64 toFixedString toFloat32 toFloat32OrNull
	toFloat32OrZero toFloat64 toFloat64OrNull toFloat64OrZero toHour toISOWeek toISOYear toInt16
	toInt16OrNull toInt16OrZero toInt32 toInt32OrNull toInt32OrZero toInt64 toInt64OrNull
	toInt64OrZero toInt8 toInt8OrNull toInt8OrZero toIntervalDay toIntervalHour toIntervalMinute
	toIntervalMonth toIntervalSecond toIntervalWeek toIntervalYear toLowCardinality toMinute toMonday
	toMonth toNullable toQuarter toRelativeDayNum toRelativeHourNum toRelativeMinuteNum
	toRelativeMonthNum toRelativeQuarterNum toRelativeSecondNum toRelativeWeekNum toRelativeYearNum
	toSecond toStartOfDay toStartOfFifteenMinutes toStartOfFiveMinute toStartOfHour toStartOfISOYear
	toStartOfMinute toStartOfMonth toStartOfQuarter toStartOfYear toString toStringCutToZero toTime
	toTimeZone toTypeName toUInt16 toUInt16OrNull toUInt16OrZero toUInt32 toUInt32OrNull
	toUInt32OrZero toUInt64 toUInt64OrNull toUInt64OrZero toUInt8 toUInt8OrNull toUInt8OrZero toUUID
	toUnixTimestamp toYYYYMM toYYYYMMDD toYYYYMMDDhhmmss toYear topK topLevelDomain tupleElement
	uniqCombined uniqExact uniqHLL12 uniqUpTo upperUTF8 varPop varPopStable varSamp varSampStable
	visibleWidth visitParamExtractBool visitParamExtractFloat visitParamExtractInt
	visitParamExtractRaw visitParamExtractString visitParamExtractUInt visitParamHas
	yandexConsistentHash
`

const clickHouse1816Aggregates = `
	BIT_AND BIT_OR BIT_XOR COVAR_POP COVAR_SAMP STDDEV_POP STDDEV_SAMP VAR_POP VAR_SAMP any anyHeavy
	anyLast argMax argMin avg corr corrStable count covarPop covarPopStable covarSamp covarSampStable
	groupArray groupArrayInsertAt groupBitAnd groupBitOr groupBitXor groupUniqArray histogram max
	maxIntersections maxIntersectionsPosition median medianDeterministic medianExact
	medianExactWeighted medianTDigest medianTDigestWeighted medianTiming medianTimingWeighted min
	quantile quantileDeterministic quantileExact quantileExactWeighted quantileTDigest
	quantileTDigestWeighted quantileTiming quantileTimingWeighted quantiles quantilesDeterministic
	quantilesExact quantilesExactWeighted quantilesTDigest quantilesTDigestWeighted quantilesTiming
	quantilesTimingWeighted retention sequenceCount sequenceMatch stddevPop stddevPopStable stddevSamp
	stddevSampStable sum sumKahan sumMap sumWithOverflow topK uniq uniqCombined uniqExact uniqHLL12
	uniqUpTo varPop varPopStable varSamp varSampStable windowFunnel
`

const clickHouseNewerNames = `
	CAST CRC32 CRC32IEEE CRC64 DATE FQDN IPv4CIDRToRange IPv4StringToNumOrDefault
	IPv4StringToNumOrNull IPv6CIDRToRange IPv6StringToNumOrDefault IPv6StringToNumOrNull JSONExtract
	JSONExtractArrayRaw JSONExtractBool JSONExtractFloat JSONExtractInt JSONExtractKeys
	JSONExtractKeysAndValues JSONExtractKeysAndValuesRaw JSONExtractRaw JSONExtractString
	JSONExtractUInt JSONHas JSONKey JSONLength JSONType JSON_EXISTS JSON_QUERY JSON_VALUE L1Distance
	L1Norm L1Normalize L2Distance L2Norm L2Normalize L2SquaredDistance L2SquaredNorm LinfDistance
	LinfNorm LinfNormalize LpDistance LpNorm LpNormalize accurateCast accurateCastOrDefault
	accurateCastOrNull addressToLine addressToLineWithInlines addressToSymbol base58Decode
	base58Encode bitPositionsToArray blockSerializedSize buildId byteSize catboostEvaluate
	connectionId cosineDistance countDigits countMatches countMatchesCaseInsensitive countSubstrings
	countSubstringsCaseInsensitive countSubstringsCaseInsensitiveUTF8 currentProfiles currentRoles
	currentUser dateDiff dateTime64ToSnowflake dateTimeToSnowflake dateTrunc decodeHTMLComponent
	decodeURLFormComponent decodeXMLComponent defaultProfiles defaultRoles defaultValueOfTypeName
	dotProduct enabledProfiles enabledRoles encodeURLComponent encodeURLFormComponent
	encodeXMLComponent errorCodeToName evalMLMethod extractAllGroupsHorizontal
	extractAllGroupsVertical extractGroups extractTextFromHTML farmFingerprint64 filesystemAvailable
	filesystemCapacity filesystemUnreserved firstSignificantSubdomainCustom
	firstSignificantSubdomainCustomRFC flattenTuple formatReadableQuantity formatReadableTimeDelta
	formatRow formatRowNoNewline fromUnixTimestamp64Micro fromUnixTimestamp64Milli
	fromUnixTimestamp64Nano fromUnixTimestamp64Second fuzzBits gccMurmurHash geoDistance geohashDecode
	geohashEncode geohashesInBox getMacro getOSKernelVersion getServerPort getTypeSerializationStreams
	globalInIgnoreSet globalNotInIgnoreSet globalNotNullIn globalNotNullInIgnoreSet globalNullIn
	globalNullInIgnoreSet globalVariable greatCircleAngle hasSubsequence hasSubsequenceCaseInsensitive
	hasSubsequenceCaseInsensitiveUTF8 hasSubsequenceUTF8 hasThreadFuzzer hiveHash hopEnd hopStart
	ifNull inIgnoreSet initcapUTF8 initialQueryID initializeAggregation isConstant isDecimalOverflow
	isIPAddressInRange isIPv4String isIPv6String isNullable isValidJSON isValidUTF8 isZeroOrNull
	javaHash javaHashUTF16LE joinGetOrNull kafkaMurmurHash kostikConsistentHash leftPad leftPadUTF8
	leftUTF8 logTrace mapAdd mapFromArrays mapPopulateSeries mapSubtract mapUpdate
	minSampleSizeContinuous minSampleSizeConversion moduloLegacy multiFuzzyMatchAllIndices
	multiFuzzyMatchAny multiFuzzyMatchAnyIndex multiMatchAllIndices multiMatchAny multiMatchAnyIndex
	multiSearchAllPositions multiSearchAllPositionsCaseInsensitive
	multiSearchAllPositionsCaseInsensitiveUTF8 multiSearchAllPositionsUTF8 multiSearchAny
	multiSearchAnyCaseInsensitive multiSearchAnyCaseInsensitiveUTF8 multiSearchAnyUTF8
	multiSearchFirstIndex multiSearchFirstIndexCaseInsensitive
	multiSearchFirstIndexCaseInsensitiveUTF8 multiSearchFirstIndexUTF8 multiSearchFirstPosition
	multiSearchFirstPositionCaseInsensitive multiSearchFirstPositionCaseInsensitiveUTF8
	multiSearchFirstPositionUTF8 ngramDistance ngramDistanceCaseInsensitive
	ngramDistanceCaseInsensitiveUTF8 ngramDistanceUTF8 ngramMinHash ngramMinHashArg
	ngramMinHashArgCaseInsensitive ngramMinHashArgCaseInsensitiveUTF8 ngramMinHashArgUTF8
	ngramMinHashCaseInsensitive ngramMinHashCaseInsensitiveUTF8 ngramMinHashUTF8 ngramSearch
	ngramSearchCaseInsensitive ngramSearchCaseInsensitiveUTF8 ngramSearchUTF8 ngramSimHash
	ngramSimHashCaseInsensitive ngramSimHashCaseInsensitiveUTF8 ngramSimHashUTF8 normalizeQuery
	normalizeQueryKeepNames normalizedQueryHash normalizedQueryHashKeepNames notILike notInIgnoreSet
	notNullIn notNullInIgnoreSet nullIf nullIn nullInIgnoreSet parseDateTime parseDateTime32BestEffort
	parseDateTime32BestEffortOrNull parseDateTime32BestEffortOrZero parseDateTime64
	parseDateTime64BestEffort parseDateTime64BestEffortOrNull parseDateTime64BestEffortOrZero
	parseDateTime64BestEffortUS parseDateTime64BestEffortUSOrNull parseDateTime64BestEffortUSOrZero
	parseDateTime64InJodaSyntax parseDateTime64InJodaSyntaxOrNull parseDateTime64InJodaSyntaxOrZero
	parseDateTime64OrNull parseDateTime64OrZero parseDateTimeBestEffortUS
	parseDateTimeBestEffortUSOrNull parseDateTimeBestEffortUSOrZero parseDateTimeInJodaSyntax
	parseDateTimeInJodaSyntaxOrNull parseDateTimeInJodaSyntaxOrZero parseDateTimeOrNull
	parseDateTimeOrZero parseTimeDelta partitionId polygonAreaCartesian polygonAreaSpherical
	polygonConvexHullCartesian polygonPerimeterCartesian polygonPerimeterSpherical
	polygonsDistanceCartesian polygonsDistanceSpherical polygonsEqualsCartesian
	polygonsIntersectionCartesian polygonsIntersectionSpherical polygonsSymDifferenceCartesian
	polygonsSymDifferenceSpherical polygonsUnionCartesian polygonsUnionSpherical
	polygonsWithinCartesian polygonsWithinSpherical proportionsZTest queryID randomFixedString
	randomPrintableASCII randomString randomStringUTF8 readWKTMultiPolygon readWKTPoint readWKTPolygon
	readWKTRing regexpQuoteMeta reinterpretAsInt128 reinterpretAsInt256 reinterpretAsUInt128
	reinterpretAsUInt256 reinterpretAsUUID rightPad rightPadUTF8 rightUTF8 roundBankers roundDown
	runningConcurrency serverUUID shardCount shardNum showCertificate sipHash128Keyed sipHash64Keyed
	snowflakeToDateTime snowflakeToDateTime64 splitByNonAlpha splitByRegexp splitByWhitespace
	substringIndex substringIndexUTF8 tcpPort toBool toDate32 toDate32OrDefault toDate32OrNull
	toDate32OrZero toDateOrDefault toDateTime32 toDateTime64 toDateTime64OrDefault toDateTime64OrNull
	toDateTime64OrZero toDateTimeOrDefault toDecimal128OrDefault toDecimal128OrNull toDecimal128OrZero
	toDecimal256 toDecimal256OrDefault toDecimal256OrNull toDecimal256OrZero toDecimal32OrDefault
	toDecimal32OrNull toDecimal32OrZero toDecimal64OrDefault toDecimal64OrNull toDecimal64OrZero
	toFloat32OrDefault toFloat64OrDefault toIPv4 toIPv4OrDefault toIPv4OrNull toIPv4OrZero toIPv6
	toIPv6OrDefault toIPv6OrNull toIPv6OrZero toInt128 toInt128OrDefault toInt128OrNull toInt128OrZero
	toInt16OrDefault toInt256 toInt256OrDefault toInt256OrNull toInt256OrZero toInt32OrDefault
	toInt64OrDefault toInt8OrDefault toIntervalMicrosecond toIntervalMillisecond toIntervalNanosecond
	toIntervalQuarter toJSONString toStartOfMillisecond toTime64 toTime64OrNull toTime64OrZero
	toTimeOrNull toTimeOrZero toUInt128 toUInt128OrNull toUInt128OrZero toUInt16OrDefault toUInt256
	toUInt256OrDefault toUInt256OrNull toUInt256OrZero toUInt32OrDefault toUInt64OrDefault
	toUInt8OrDefault toUUIDOrDefault toUUIDOrNull toUUIDOrZero toUnixTimestamp64Micro
	toUnixTimestamp64Milli toUnixTimestamp64Nano toUnixTimestamp64Second toValidUTF8 toWeek toYearWeek
	transactionID transactionLatestSnapshot transactionOldestSnapshot translateUTF8 trimBoth trimLeft
	trimRight tryBase58Decode tumbleEnd tumbleStart tupleConcat tupleDivide tupleDivideByNumber
	tupleHammingDistance tupleIntDiv tupleIntDivByNumber tupleIntDivOrZero tupleIntDivOrZeroByNumber
	tupleMinus tupleModulo tupleModuloByNumber tupleMultiply tupleMultiplyByNumber tupleNegate
	tuplePlus tupleToNameValuePairs validateNestedArraySizes windowID wordShingleMinHash
	wordShingleMinHashArg wordShingleMinHashArgCaseInsensitive
	wordShingleMinHashArgCaseInsensitiveUTF8 wordShingleMinHashArgUTF8
	wordShingleMinHashCaseInsensitive wordShingleMinHashCaseInsensitiveUTF8 wordShingleMinHashUTF8
	wordShingleSimHash wordShingleSimHashCaseInsensitive wordShingleSimHashCaseInsensitiveUTF8
	wordShingleSimHashUTF8 wyHash64 xxHash32 xxHash64 zookeeperSessionUptime
`
