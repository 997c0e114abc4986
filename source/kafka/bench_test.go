package kafka

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkBuilderJSON measures the per-record decode path of read-kafka --value-format json
// with nexmark bids (the values of make bench W1), without a broker.
func BenchmarkBuilderJSON(b *testing.B) {
	valC, err := codecFor(FormatJSON, "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING", "--value-format", nil)
	if err != nil {
		b.Fatal(err)
	}
	keyC := &binaryCodec{}
	schema := schemaFor(keyC, valC, true)
	bl, err := newBuilder(memory.NewGoAllocator(), schema, keyC, valC)
	if err != nil {
		b.Fatal(err)
	}
	defer bl.release()
	recs := make([]*kgo.Record, 1000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "bench-w1", Partition: int32(i % 2), Offset: int64(i),
			Value: []byte(fmt.Sprintf(`{"auction":%d,"bidder":%d,"price":%d,"channel":"Google","url":"https://www.nexmark.com/qje/dqwn/rnvo/item.htm?query=1","date_time":"2024-01-01T00:00:%02d.%03dZ","extra":"amfbsrvbevgorpyzyngdztvdmoqrhhhqgbdfurcduinynuzyedyakbcblgvvekioplogtpzdxn"}`, 1000+i, 2000+i%100, i*7919, i%60, i%1000))}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bl.add(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		if bl.rows == 1<<14 {
			bl.finish().Release()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rec/s")
}
